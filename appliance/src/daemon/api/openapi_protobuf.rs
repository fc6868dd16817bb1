//! The v2 document as protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
//! gnostic's `openapi.v2.Document`), the only form client-go's `OpenAPISchema()` reads (kubectl
//! `explain --output plaintext-openapiv2`, client-side validation and strategic merge patches of
//! kinds without a v3 PATCH operation).
//!
//! Encoded: `swagger`, `info`, `paths` (operations with their description, operation id and
//! vendor extensions; no parameters or responses) and `definitions` (every schema keyword the
//! documents use). Vendor extensions and enum values are gnostic `Any`s with their value as
//! YAML text; JSON text is YAML, so it is written as JSON.

use serde_json::{Map, Value};

/// Field numbers of gnostic's `OpenAPIv2.proto`.
mod field {
    pub mod document {
        pub const SWAGGER: u32 = 1;
        pub const INFO: u32 = 2;
        pub const PATHS: u32 = 8;
        pub const DEFINITIONS: u32 = 9;
    }
    pub mod info {
        pub const TITLE: u32 = 1;
        pub const VERSION: u32 = 2;
    }
    pub mod schema {
        pub const REF: u32 = 1;
        pub const FORMAT: u32 = 2;
        pub const DESCRIPTION: u32 = 4;
        pub const REQUIRED: u32 = 19;
        pub const ENUM: u32 = 20;
        pub const ADDITIONAL_PROPERTIES: u32 = 21;
        pub const TYPE: u32 = 22;
        pub const ITEMS: u32 = 23;
        pub const ALL_OF: u32 = 24;
        pub const PROPERTIES: u32 = 25;
        pub const VENDOR_EXTENSION: u32 = 31;
    }
    pub mod operation {
        pub const TAGS: u32 = 1;
        pub const DESCRIPTION: u32 = 3;
        pub const OPERATION_ID: u32 = 5;
        pub const VENDOR_EXTENSION: u32 = 13;
    }
    /// `PathItem`'s operations by method.
    pub fn path_item_operation(method: &str) -> Option<u32> {
        Some(match method {
            "get" => 2,
            "put" => 3,
            "post" => 4,
            "delete" => 5,
            "patch" => 8,
            _ => return None,
        })
    }
}

const LENGTH_DELIMITED: u32 = 2;
const VARINT: u32 = 0;

#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, LENGTH_DELIMITED);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// A string field; proto3 leaves empty strings out.
    fn string(&mut self, field: u32, text: &str) {
        if !text.is_empty() {
            self.bytes(field, text.as_bytes());
        }
    }

    fn boolean(&mut self, field: u32, value: bool) {
        if value {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.0);
    }
}

/// `Any{yaml}` with `value` as JSON text.
fn any(value: &Value) -> Message {
    let mut m = Message::default();
    m.string(2, &value.to_string());
    m
}

/// `NamedAny{name, value}` entries for the `x-` members of `map`.
fn vendor_extensions(m: &mut Message, field: u32, map: &Map<String, Value>) {
    for (name, value) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Message::default();
        named.string(1, name);
        named.message(2, any(value));
        m.message(field, named);
    }
}

fn schema(value: &Value) -> Message {
    use field::schema as f;
    let mut m = Message::default();
    let Some(map) = value.as_object() else {
        return m;
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
    m.string(f::REF, text("$ref"));
    m.string(f::FORMAT, text("format"));
    m.string(f::DESCRIPTION, text("description"));
    for required in map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.string(f::REQUIRED, required.as_str().unwrap_or_default());
    }
    for value in map
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(f::ENUM, any(value));
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::default();
            item.boolean(2, *allowed);
            m.message(f::ADDITIONAL_PROPERTIES, item);
        }
        Some(values @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(values));
            m.message(f::ADDITIONAL_PROPERTIES, item);
        }
        _ => {}
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if !types.is_empty() {
        let mut item = Message::default();
        for t in types {
            item.string(1, t);
        }
        m.message(f::TYPE, item);
    }
    if let Some(items) = map.get("items") {
        let mut item = Message::default();
        item.message(1, schema(items));
        m.message(f::ITEMS, item);
    }
    for part in map
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(f::ALL_OF, schema(part));
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        m.message(f::PROPERTIES, named_schemas(properties));
    }
    vendor_extensions(&mut m, f::VENDOR_EXTENSION, map);
    m
}

/// `Properties` / `Definitions`: `repeated NamedSchema additional_properties = 1`.
fn named_schemas(schemas: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    for (name, value) in schemas {
        let mut named = Message::default();
        named.string(1, name);
        named.message(2, schema(value));
        m.message(1, named);
    }
    m
}

fn operation(value: &Value) -> Message {
    use field::operation as f;
    let mut m = Message::default();
    let Some(map) = value.as_object() else {
        return m;
    };
    for tag in map
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.string(f::TAGS, tag.as_str().unwrap_or_default());
    }
    m.string(
        f::DESCRIPTION,
        map.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    m.string(
        f::OPERATION_ID,
        map.get("operationId")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    vendor_extensions(&mut m, f::VENDOR_EXTENSION, map);
    m
}

/// The protobuf encoding of the v2 `document` (its JSON form).
pub fn encode(document: &Value) -> Vec<u8> {
    use field::document as f;
    let mut m = Message::default();
    m.string(f::SWAGGER, document["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Message::default();
    info.string(
        field::info::TITLE,
        document["info"]["title"].as_str().unwrap_or_default(),
    );
    info.string(
        field::info::VERSION,
        document["info"]["version"].as_str().unwrap_or_default(),
    );
    m.message(f::INFO, info);
    let mut paths = Message::default();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        let mut path_item = Message::default();
        for (method, op) in item.as_object().into_iter().flatten() {
            if let Some(number) = field::path_item_operation(method) {
                path_item.message(number, operation(op));
            }
        }
        let mut named = Message::default();
        named.string(1, path);
        named.message(2, path_item);
        paths.message(2, named);
    }
    m.message(f::PATHS, paths);
    if let Some(definitions) = document["definitions"].as_object() {
        m.message(f::DEFINITIONS, named_schemas(definitions));
    }
    m.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_schemas_as_gnostic_does() {
        // Schema{type: TypeItem{["string"]}, description: "d", vendor_extension:
        // [NamedAny{"x-a", Any{yaml: "true"}}]}; fields written in field-number order.
        let bytes = schema(&json!({"type": "string", "description": "d", "x-a": true})).0;
        let mut want = vec![0x22, 1, b'd']; // description = 4
        want.extend([0xb2, 0x01, 8, 0x0a, 6]); // type = 22: TypeItem{value = 1}
        want.extend(b"string");
        want.extend([0xfa, 0x01, 13, 0x0a, 3]); // vendor_extension = 31: NamedAny{name = 1}
        want.extend(b"x-a");
        want.extend([0x12, 6, 0x12, 4]); // value = 2: Any{yaml = 2}
        want.extend(b"true");
        assert_eq!(bytes, want);
    }

    #[test]
    fn long_fields_get_multi_byte_lengths() {
        let mut m = Message::default();
        m.string(1, &"a".repeat(300));
        assert_eq!(&m.0[..3], &[0x0a, 0xac, 0x02]);
        assert_eq!(m.0.len(), 303);
    }
}

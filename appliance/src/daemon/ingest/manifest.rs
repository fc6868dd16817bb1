//! Parsing one manifest file into validated objects, with compiler-style locations.
//!
//! Pure: the caller passes the bytes. Used by the folder ingest and by the offline `validate`
//! command. A file is all-or-nothing: the first bad document rejects the whole file.

use std::collections::HashMap;
use std::fmt;

use landscaper_store::ObjectKey;
use landscaper_store::model::{self, Kind, validate_object};
use landscaper_store::object::{self, DEFAULT_NAMESPACE};
use serde_json::{Map, Value};

use super::scan::parallel_map;

/// Where and why a manifest file was rejected. Displays as
/// `path:line:column: document N: message`, leaving out the parts that are unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// The file's path as given by the caller (relative to the manifests folder for ingest).
    pub path: String,
    /// 0-based index of the YAML document (or JSON value) in the file.
    pub document: Option<usize>,
    /// 1-based line in the file.
    pub line: Option<usize>,
    /// 1-based column in the file, in characters.
    pub column: Option<usize>,
    /// Field path inside the object, e.g. `spec.imports.data[0].dataRef`.
    pub field: Option<String>,
    /// What is wrong; includes the field path when there is one.
    pub message: String,
}

impl ManifestError {
    /// An error about the file as a whole (unreadable, conflicts with other files, ...).
    pub fn file(path: impl Into<String>, message: impl Into<String>) -> Self {
        ManifestError {
            path: path.into(),
            document: None,
            line: None,
            column: None,
            field: None,
            message: message.into(),
        }
    }

    /// The record kept in `ManifestFile.status.lastError`.
    pub fn to_status(&self) -> model::ManifestError {
        let narrow = |n: Option<usize>| n.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        model::ManifestError {
            document: narrow(self.document),
            line: narrow(self.line),
            column: narrow(self.column),
            message: self.message.clone(),
            field: self.field.clone(),
        }
    }
}

fn write_location(
    f: &mut fmt::Formatter<'_>,
    path: &str,
    line: Option<usize>,
    column: Option<usize>,
    document: Option<usize>,
) -> fmt::Result {
    f.write_str(path)?;
    if let Some(line) = line {
        write!(f, ":{line}")?;
        if let Some(column) = column {
            write!(f, ":{column}")?;
        }
    }
    f.write_str(": ")?;
    if let Some(document) = document {
        write!(f, "document {document}: ")?;
    }
    Ok(())
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.path, self.line, self.column, self.document)?;
        f.write_str(&self.message)
    }
}

impl std::error::Error for ManifestError {}

/// A finding that does not reject the file, e.g. an unknown field (dropped from the object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestWarning {
    pub path: String,
    pub document: Option<usize>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ManifestWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.path, self.line, self.column, self.document)?;
        write!(f, "warning: {}", self.message)
    }
}

/// One validated object of a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestObject {
    pub key: ObjectKey,
    /// The validated object: unknown and server-managed fields removed, namespace defaulted.
    pub object: Value,
    /// 0-based document index in the file.
    pub document: usize,
    /// Index within a `kind: List` document.
    pub item: Option<usize>,
    /// 1-based line where the document's content starts.
    pub line: usize,
}

/// The objects of a good manifest file, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedManifest {
    pub objects: Vec<ManifestObject>,
    pub warnings: Vec<ManifestWarning>,
    /// Number of documents in the file, empty ones included.
    pub documents: usize,
}

/// Parses a manifest file: multi-document YAML, or a stream of JSON values for `*.json`.
/// Empty and comment-only documents are skipped but keep their index; a `kind: List`
/// document is expanded into its items. `path_for_messages` names the file in errors and
/// selects the format by extension.
pub fn parse_manifest(
    path_for_messages: &str,
    bytes: &[u8],
) -> Result<ParsedManifest, ManifestError> {
    let path = path_for_messages;
    let text = decode_utf8(path, bytes)?;
    let is_json = path.to_ascii_lowercase().ends_with(".json");
    // YAML counts a lone `\r` as a line break too; normalised, the parser's lines and ours
    // agree. Scalars do not change: YAML normalises line breaks in their content anyway.
    let yaml_text;
    let documents = if is_json {
        json_documents(path, text)?
    } else {
        yaml_text = normalise_line_breaks(text);
        yaml_documents(path, &yaml_text)?
    };
    let mut parsed = ParsedManifest {
        documents: documents.count,
        ..ParsedManifest::default()
    };
    let mut seen: HashMap<ObjectKey, usize> = HashMap::new();
    for doc in &documents.items {
        let ctx = DocContext {
            path,
            index: doc.index,
            text: doc.text,
            first_line: doc.first_line,
            content_line: doc.content_line,
        };
        let Value::Object(map) = &doc.value else {
            return Err(ctx.error_at_start(format!(
                "a document must be a mapping with apiVersion, kind and metadata, found {}",
                describe(&doc.value)
            )));
        };
        if is_list(map) {
            let items = match map.get("items") {
                Some(Value::Array(items)) => items,
                None | Some(Value::Null) => &Vec::new(),
                Some(other) => {
                    return Err(ctx.error_at_field(
                        "items",
                        format!(
                            "items: invalid type: {}, expected a sequence",
                            describe(other)
                        ),
                    ));
                }
            };
            for (i, item) in items.iter().enumerate() {
                let object = admit(&ctx, item, Some(i), &mut parsed.warnings)?;
                push_unique(&ctx, object, Some(i), &mut seen, &mut parsed.objects)?;
            }
        } else {
            let object = admit(&ctx, &doc.value, None, &mut parsed.warnings)?;
            push_unique(&ctx, object, None, &mut seen, &mut parsed.objects)?;
        }
    }
    Ok(parsed)
}

/// `apiVersion: v1, kind: List` (what `kubectl get -o yaml` writes).
fn is_list(map: &Map<String, Value>) -> bool {
    map.get("kind").and_then(Value::as_str) == Some("List")
        && matches!(
            map.get("apiVersion").and_then(Value::as_str),
            Some("v1") | None
        )
}

fn push_unique(
    ctx: &DocContext<'_>,
    (key, object): (ObjectKey, Value),
    item: Option<usize>,
    seen: &mut HashMap<ObjectKey, usize>,
    objects: &mut Vec<ManifestObject>,
) -> Result<(), ManifestError> {
    if let Some(&first) = seen.get(&key) {
        let field = item.map(|i| format!("items[{i}].metadata.name"));
        let (line, column) = field
            .as_deref()
            .and_then(|f| ctx.locate(f))
            .or_else(|| ctx.locate("metadata.name"))
            .unwrap_or((ctx.content_line, 1));
        return Err(ManifestError {
            path: ctx.path.to_string(),
            document: Some(ctx.index),
            line: Some(line),
            column: Some(column),
            field: None,
            message: format!("{key} is defined twice in this file (first in document {first})"),
        });
    }
    seen.insert(key.clone(), ctx.index);
    objects.push(ManifestObject {
        key,
        object,
        document: ctx.index,
        item,
        line: ctx.content_line,
    });
    Ok(())
}

/// Metadata the store sets; a manifest copied from a live system may carry them.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Validates one object of a document and returns its key and cleaned form.
fn admit(
    ctx: &DocContext<'_>,
    value: &Value,
    item: Option<usize>,
    warnings: &mut Vec<ManifestWarning>,
) -> Result<(ObjectKey, Value), ManifestError> {
    let prefix = item.map(|i| format!("items[{i}].")).unwrap_or_default();
    let field_error = |field: &str, message: String| {
        let full = if field.is_empty() {
            prefix.trim_end_matches('.').to_string()
        } else {
            format!("{prefix}{field}")
        };
        if full.is_empty() {
            ctx.error_at_start(message)
        } else {
            ctx.error_at_field(&full, format!("{full}: {message}"))
        }
    };
    let Value::Object(map) = value else {
        return Err(field_error(
            "",
            format!("invalid type: {}, expected a mapping", describe(value)),
        ));
    };
    let mut object = map.clone();
    for managed in [Kind::ManifestFile, Kind::TransportArchive] {
        if object.get("kind").and_then(Value::as_str) == Some(managed.as_str())
            && object.get("apiVersion").and_then(Value::as_str) == Some(managed.api_version())
        {
            return Err(field_error(
                "kind",
                format!(
                    "{managed} objects are managed by the appliance and cannot be defined in manifests"
                ),
            ));
        }
    }
    let mut warn = |field: &str, message: String| {
        let (line, column) = ctx.locate(&format!("{prefix}{field}")).unzip();
        warnings.push(ManifestWarning {
            path: ctx.path.to_string(),
            document: Some(ctx.index),
            line: line.or(Some(ctx.content_line)),
            column,
            message,
        });
    };
    // Status belongs to the controllers, ownership to the store; neither comes from a file.
    if object.remove("status").is_some() {
        warn(
            "status",
            format!("{prefix}status is managed by the appliance and was ignored"),
        );
    }
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        for field in SERVER_METADATA {
            meta.remove(*field);
        }
        for field in ["ownerReferences", "finalizers"] {
            if meta.remove(field).is_some() {
                warn(
                    &format!("metadata.{field}"),
                    format!("{prefix}metadata.{field} is managed by the appliance and was ignored"),
                );
            }
        }
    }
    let object = Value::Object(object);
    let name = object.pointer("/metadata/name");
    if name.is_none_or(|n| n.is_null() || n.as_str() == Some("")) {
        return Err(field_error(
            "metadata.name",
            "Required value: objects in manifest files need a name (generateName is not supported)"
                .into(),
        ));
    }
    let validated = validate_object(&object).map_err(|e| field_error(&e.field, e.message))?;
    if validated.kind == Kind::Execution
        && let Ok(exec) = model::from_value::<model::Execution>(&validated.object)
    {
        // Workflow conditions (issue 19) are compiled when the Execution is loaded.
        crate::daemon::controllers::execution::machine::workflow::check_admission(&exec)
            .map_err(|(field, message)| field_error(&field, message))?;
    }
    if validated.kind == Kind::Installation
        && let Ok(inst) = model::from_value::<model::Installation>(&validated.object)
    {
        // The Installation's own workflow block (issue 19) is compiled when it is loaded.
        crate::daemon::controllers::installation::workflow::check_admission(&inst)
            .map_err(|(field, message)| field_error(&field, message))?;
    }
    for warning in validated.warnings {
        let field = warning
            .strip_prefix("unknown field \"")
            .and_then(|w| w.strip_suffix('"'))
            .unwrap_or_default()
            .to_string();
        let message = if prefix.is_empty() {
            warning
        } else {
            format!("unknown field \"{prefix}{field}\"")
        };
        warn(&field, message);
    }
    let mut object = validated.object;
    model::prepare_for_storage(validated.kind, &mut object);
    let key = object::key_of(&object).map_err(|e| match e {
        landscaper_store::StoreError::Encoding(landscaper_store::EncodingError::Invalid {
            field,
            message,
            ..
        }) => field_error(&field, message),
        other => field_error("metadata", other.to_string()),
    })?;
    if key.kind.namespaced() && object::namespace(&object).is_empty() {
        object::metadata_mut(&mut object)
            .insert("namespace".into(), Value::String(DEFAULT_NAMESPACE.into()));
    }
    Ok((key, object))
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// One document's text and position, for locating fields in it.
struct DocContext<'a> {
    path: &'a str,
    index: usize,
    text: &'a str,
    /// File line of the document's first text line (its `---` line, if any).
    first_line: usize,
    /// File line of the document's first content (not blank, comment or `---`).
    content_line: usize,
}

impl DocContext<'_> {
    fn error_at_start(&self, message: String) -> ManifestError {
        ManifestError {
            path: self.path.to_string(),
            document: Some(self.index),
            line: Some(self.content_line),
            column: Some(1),
            field: None,
            message,
        }
    }

    fn error_at_field(&self, field: &str, message: String) -> ManifestError {
        let (line, column) = self.locate(field).unwrap_or((self.content_line, 1));
        ManifestError {
            path: self.path.to_string(),
            document: Some(self.index),
            line: Some(line),
            column: Some(column),
            field: (!field.is_empty()).then(|| field.to_string()),
            message,
        }
    }

    /// File line and column of the deepest key of `field` found in the document text.
    fn locate(&self, field: &str) -> Option<(usize, usize)> {
        let (line, column) = locate_field(self.text, field)?;
        Some((self.first_line + line - 1, column))
    }
}

/// Finds the key of a field path (`spec.imports.data[0].dataRef`, `data[my.key]`) in YAML or
/// JSON text: each key is searched after the previous one (and a sequence index selects the
/// item of a block sequence), so the result is the line of the deepest part found (the
/// parent, when the field itself is missing). A heuristic, good for pointing a user at the
/// right line; returns 1-based (line, column) within `text`.
pub(crate) fn locate_field(text: &str, field: &str) -> Option<(usize, usize)> {
    let mut position = 0;
    let mut found = None;
    for segment in path_segments(field) {
        let at = match &segment {
            Segment::Key(key) => find_key(text, key, position),
            // Flow sequences (JSON) are not followed: the next key is searched instead.
            Segment::Index(index) => match find_item(text, position, *index) {
                Some(at) => Some((at, at + 1)),
                None if text[position..].trim_start().starts_with('[') => continue,
                None => None,
            },
        };
        match at {
            Some((start, next)) => {
                position = next;
                found = Some(start);
            }
            None => break,
        }
    }
    let at = found?;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = text[line_start..at].chars().count() + 1;
    Some((line, column))
}

enum Segment {
    Key(String),
    Index(usize),
}

/// The parts of a field path: map keys and sequence indexes.
fn path_segments(field: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' | '[' => {
                if !current.is_empty() {
                    segments.push(Segment::Key(std::mem::take(&mut current)));
                }
                if c == '[' {
                    let inner: String = chars.by_ref().take_while(|&c| c != ']').collect();
                    match inner.parse::<usize>() {
                        Ok(index) => segments.push(Segment::Index(index)),
                        Err(_) if !inner.is_empty() => segments.push(Segment::Key(inner)),
                        Err(_) => {}
                    }
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        segments.push(Segment::Key(current));
    }
    segments
}

/// Byte offset of the `-` of item `index` of the block sequence that follows `from` (the end of
/// its key). Flow sequences (`[a, b]`, JSON) are not followed.
fn find_item(text: &str, from: usize, index: usize) -> Option<usize> {
    let rest = text.get(from..)?;
    // Skip the remainder of the key's line.
    let mut offset = from + rest.find('\n')? + 1;
    let mut indent = None;
    let mut seen = 0;
    for line in text[offset..].split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let here = line.len() - trimmed.len();
        let blank = trimmed.trim().is_empty() || trimmed.starts_with('#');
        if !blank {
            let is_item = trimmed.starts_with("- ") || trimmed.trim_end() == "-";
            match indent {
                None if is_item => indent = Some(here),
                None => return None,
                Some(level) if here < level || (here == level && !is_item) => return None,
                Some(_) => {}
            }
            if is_item && Some(here) == indent {
                if seen == index {
                    return Some(offset + here);
                }
                seen += 1;
            }
        }
        offset += line.len();
    }
    None
}

/// Byte offset of the next occurrence of `key` used as a mapping key at or after `from`.
/// Returns where the key starts and where its `:` ends.
fn find_key(text: &str, key: &str, from: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut search = from;
    while let Some(rel) = text.get(search..)?.find(key) {
        let at = search + rel;
        let end = at + key.len();
        search = at + 1;
        let prev = at.checked_sub(1).map(|i| bytes[i]);
        let (quoted, after) = match prev {
            Some(q @ (b'"' | b'\'')) if bytes.get(end) == Some(&q) => (true, end + 1),
            _ => (false, end),
        };
        let start = if quoted { at - 1 } else { at };
        let boundary_before = match start.checked_sub(1).map(|i| bytes[i]) {
            None => true,
            Some(b) => matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'{' | b',' | b'-' | b'?'),
        };
        if !boundary_before {
            continue;
        }
        let rest = &bytes[after..];
        let colon = rest.iter().position(|b| !matches!(b, b' ' | b'\t'));
        if let Some(i) = colon
            && rest[i] == b':'
            && (quoted || rest.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()))
        {
            return Some((start, after + i + 1));
        }
    }
    None
}

/// The decoded documents of a file.
struct Documents<'a> {
    /// Non-empty documents.
    items: Vec<Document<'a>>,
    /// All documents, empty ones included.
    count: usize,
}

struct Document<'a> {
    index: usize,
    text: &'a str,
    first_line: usize,
    content_line: usize,
    value: Value,
}

fn normalise_line_breaks(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// serde_json reports byte columns; messages count characters.
fn char_column(text: &str, line: usize, byte_column: usize) -> usize {
    let Some(line_text) = text.split('\n').nth(line.saturating_sub(1)) else {
        return byte_column.max(1);
    };
    let mut end = byte_column.min(line_text.len());
    while !line_text.is_char_boundary(end) {
        end -= 1;
    }
    let chars = line_text[..end].chars().count();
    // A column just past the last character (end of input) stays one past it.
    (chars + usize::from(byte_column > line_text.len() && byte_column > 0)).max(1)
}

fn decode_utf8<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, ManifestError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        // The valid prefix is text, so lines and columns can be counted on it.
        let prefix = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
        let line = prefix.matches('\n').count() + 1;
        let column = prefix
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .chars()
            .count()
            + 1;
        let is_json = path.to_ascii_lowercase().ends_with(".json");
        let document = if is_json {
            None
        } else {
            split_yaml(prefix).last().map(|c| c.index)
        };
        ManifestError {
            path: path.to_string(),
            document,
            line: Some(line),
            column: Some(column),
            field: None,
            message: format!(
                "the file is not valid UTF-8: invalid byte 0x{:02X} at byte offset {offset}",
                bytes[offset]
            ),
        }
    })
}

/// A YAML document's slice of the file.
struct Chunk<'a> {
    index: usize,
    text: &'a str,
    /// 1-based file line of the chunk's first line.
    first_line: usize,
    /// 1-based file line of the first content, when the chunk has any.
    content_line: Option<usize>,
}

/// Whether a line is a document start marker: `---` at column 0, then whitespace or the end.
fn is_document_start(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether a line carries document content (not blank, comment, directive or end marker).
fn has_content(line: &str, is_start: bool) -> bool {
    let line = if is_start { &line[3..] } else { line };
    let trimmed = line.trim();
    !(trimmed.is_empty()
        || trimmed.starts_with('#')
        || (!is_start && (line.starts_with('%') || is_document_end(line))))
}

fn is_document_end(line: &str) -> bool {
    line.strip_prefix("...")
        .is_some_and(|rest| rest.trim_start().is_empty() || rest.trim_start().starts_with('#'))
}

/// Splits YAML text at document start markers, as Kubernetes' YAML reader does. The text
/// before the first marker is a document only if it has content. Document markers cannot
/// occur inside scalars (YAML forbids them at column 0), so this split is exact.
fn split_yaml(text: &str) -> Vec<Chunk<'_>> {
    let mut chunks: Vec<Chunk<'_>> = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    let mut content_line = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let is_start = is_document_start(line);
        if is_start && offset > 0 {
            chunks.push(Chunk {
                index: 0,
                text: &text[start..offset],
                first_line: start_line,
                content_line,
            });
            start = offset;
            start_line = line_no;
            content_line = None;
        }
        if content_line.is_none() && has_content(line, is_start) {
            content_line = Some(line_no);
        }
        offset += line.len();
    }
    if start < text.len() || chunks.is_empty() {
        chunks.push(Chunk {
            index: 0,
            text: &text[start..],
            first_line: start_line,
            content_line,
        });
    }
    // A contentless preamble before the first `---` is not a document.
    if chunks.len() > 1 && chunks[0].content_line.is_none() && !is_document_start(chunks[0].text) {
        chunks.remove(0);
    }
    for (i, chunk) in chunks.iter_mut().enumerate() {
        chunk.index = i;
    }
    chunks
}

/// From this many documents on, a file's documents are parsed in parallel.
const PARALLEL_DOCUMENTS: usize = 256;

/// The YAML parser's options for every untrusted document the daemon reads (manifest files,
/// kubeconfigs and Secret content, deployers' exports): alias expansion and retained anchors
/// bounded, so an alias bomb is refused before it costs memory.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        // Local files are trusted more than network input: allow large single documents
        // (a 10 MB DataObject) while keeping the alias-expansion limits.
        budget: serde_saphyr::budget! {
            max_nodes: 8_000_000,
            max_events: 16_000_000,
            max_documents: 1,
            // Each retained anchor event costs about 200 bytes: the default (10^6) let an
            // alias bomb take over 200 MB before it was refused. Real manifests anchor a few
            // hundred events at most.
            max_recorded_anchor_events: 100_000,
            max_recorded_anchor_bytes: 16 * 1024 * 1024,
        },
    }
}

fn yaml_documents<'a>(path: &str, text: &'a str) -> Result<Documents<'a>, ManifestError> {
    let chunks = split_yaml(text);
    let count = if text.trim().is_empty() {
        0
    } else {
        chunks.len()
    };
    // Big files parse on all cores; the first error by document order wins either way.
    let parse = |chunk: &Chunk<'a>| {
        chunk
            .content_line
            .map(|_| serde_saphyr::from_str_with_options::<Value>(chunk.text, yaml_options()))
    };
    let values = if chunks.len() >= PARALLEL_DOCUMENTS {
        parallel_map(&chunks, parse)
    } else {
        chunks.iter().map(parse).collect()
    };
    let mut items = Vec::new();
    for (chunk, value) in chunks.into_iter().zip(values) {
        let (Some(content_line), Some(value)) = (chunk.content_line, value) else {
            continue;
        };
        let value: Value = value.map_err(|e| {
            let (line, column) = e
                .location()
                .map(|l| {
                    (
                        chunk.first_line + l.line() as usize - 1,
                        l.column() as usize,
                    )
                })
                .map_or((content_line, None), |(l, c)| (l, Some(c)));
            ManifestError {
                path: path.to_string(),
                document: Some(chunk.index),
                line: Some(line),
                column: column.or(Some(1)),
                field: None,
                message: format!(
                    "YAML syntax error: {}",
                    yaml_message(&strip_location(&e.to_string()))
                ),
            }
        })?;
        if value.is_null() {
            continue;
        }
        items.push(Document {
            index: chunk.index,
            text: chunk.text,
            first_line: chunk.first_line,
            content_line,
            value,
        });
    }
    Ok(Documents { items, count })
}

/// A stream of JSON values (usually one object, as `kubectl` accepts).
fn json_documents<'a>(path: &str, text: &'a str) -> Result<Documents<'a>, ManifestError> {
    let mut items = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut index = 0;
    loop {
        let before = stream.byte_offset();
        let start = before
            + text[before..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(text.len() - before);
        let Some(next) = stream.next() else { break };
        let value = next.map_err(|e| ManifestError {
            path: path.to_string(),
            document: Some(index),
            line: Some(e.line()),
            column: Some(char_column(text, e.line(), e.column())),
            field: None,
            message: format!("JSON syntax error: {}", strip_location(&e.to_string())),
        })?;
        let end = stream.byte_offset();
        let first_line = text[..start].matches('\n').count() + 1;
        if !value.is_null() {
            items.push(Document {
                index,
                text: &text[start..end],
                first_line,
                content_line: first_line,
                value,
            });
        }
        index += 1;
    }
    Ok(Documents {
        items,
        count: index,
    })
}

/// Drops the parser's own ` at line L, column C` suffix: the error carries file coordinates.
/// A YAML parser message in the user's terms: without advice meant for programmers using the
/// parser ("set DuplicateKeyPolicy in Options"); a position at the end is kept.
pub fn yaml_message(message: &str) -> String {
    const DUPLICATE: &str = "duplicate mapping key: ";
    const ADVICE: &str = ", set DuplicateKeyPolicy in Options if acceptable";
    match (message.find(DUPLICATE), message.find(ADVICE)) {
        (Some(start), Some(advice)) if start + DUPLICATE.len() <= advice => {
            let key = &message[start + DUPLICATE.len()..advice];
            format!(
                "{}duplicate key {key:?}: a key may appear only once in a mapping{}",
                &message[..start],
                &message[advice + ADVICE.len()..]
            )
        }
        _ => message.to_string(),
    }
}

fn strip_location(message: &str) -> String {
    let message = message.trim();
    if let Some(i) = message.rfind(" at line ") {
        let tail = &message[i + " at line ".len()..];
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (line, rest) = tail.split_once([',', ' ']).unwrap_or((tail, ""));
        let column = rest.trim_start().strip_prefix("column ");
        if digits(line) && column.is_some_and(digits) {
            return message[..i].trim_end().to_string();
        }
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INST: &str = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\n";

    fn dataobject(name: &str) -> String {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: {name}\ndata:\n  a: 1\n"
        )
    }

    fn inline_installation(name: &str) -> String {
        format!(
            "{INST}metadata:\n  name: {name}\nspec:\n  blueprint:\n    inline:\n      filesystem:\n        blueprint.yaml: |\n          apiVersion: landscaper.gardener.cloud/v1alpha1\n          kind: Blueprint\n"
        )
    }

    #[test]
    fn multi_document_yaml_keeps_real_document_indexes() {
        let text = format!(
            "# leading comment\n---\n{}---\n# only a comment\n---\n\n---\n{}",
            dataobject("a"),
            dataobject("b")
        );
        let parsed = parse_manifest("dir/f.yaml", text.as_bytes()).unwrap();
        assert_eq!(parsed.documents, 4);
        let found: Vec<_> = parsed
            .objects
            .iter()
            .map(|o| (o.key.name.as_str(), o.document, o.line))
            .collect();
        assert_eq!(found, [("a", 0, 3), ("b", 3, 14)]);
        assert_eq!(parsed.objects[0].key.namespace, "default");
        assert_eq!(parsed.objects[0].object["metadata"]["namespace"], "default");
    }

    #[test]
    fn leading_document_without_marker_is_document_zero() {
        let text = format!("{}---\n{}", dataobject("a"), dataobject("b"));
        let parsed = parse_manifest("f.yml", text.as_bytes()).unwrap();
        let docs: Vec<_> = parsed.objects.iter().map(|o| o.document).collect();
        assert_eq!(docs, [0, 1]);
        assert!(
            parse_manifest("empty.yaml", b"")
                .unwrap()
                .objects
                .is_empty()
        );
        assert!(
            parse_manifest("c.yaml", b"# nothing\n")
                .unwrap()
                .objects
                .is_empty()
        );
        assert!(
            parse_manifest("n.yaml", b"---\n~\n")
                .unwrap()
                .objects
                .is_empty()
        );
    }

    #[test]
    fn alias_bombs_are_refused_before_they_cost_memory() {
        // 10^8 leaves through eight levels of aliases; each level's anchor replays the one
        // before. Refused by the retained-anchor budget (10^5 events, a few MB) instead of
        // the parser's default 10^6 (over 200 MB).
        let mut text = String::from("a: &a [x,x,x,x,x,x,x,x,x,x]\n");
        for (prev, name) in ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h"])
        {
            let list = vec![format!("*{prev}"); 10].join(",");
            text.push_str(&format!("{name}: &{name} [{list}]\n"));
        }
        let err = parse_manifest("bomb.yaml", text.as_bytes()).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.contains("RecordedAnchorEvents { recorded_anchor_events: 100001 }"),
            "{shown}"
        );
        // The same bound for kubeconfigs and Secret content.
        let err = crate::daemon::controllers::deployitem::target::parse_content(&text).unwrap_err();
        assert!(err.contains("not valid YAML"), "{err}");
    }

    #[test]
    fn an_execution_with_an_invalid_workflow_condition_is_refused_at_load() {
        let text = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Execution\nmetadata:\n  name: e\n  namespace: ns\nspec:\n  deployItems:\n  - name: a\n    type: landscaper.gardener.cloud/mock\n    appliance:\n      reconcilePrecondition: \"imports.(\"\n";
        let err = parse_manifest("x/exec.yaml", text.as_bytes()).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.contains("Execution ns/e")
                && shown.contains("deployItems[a].appliance.reconcilePrecondition")
                && shown.contains("invalid CEL expression"),
            "{shown}"
        );
        let valid = text.replace("imports.(", "true");
        assert!(parse_manifest("x/exec.yaml", valid.as_bytes()).is_ok());
    }

    #[test]
    fn an_installation_with_an_invalid_workflow_condition_is_refused_at_load() {
        let text = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: i\n  namespace: ns\n  annotations:\n    landscaper-appliance.io/workflow: \"readyPostcondition: 'self.('\"\nspec:\n  blueprint:\n    ref:\n      resourceName: bp\n";
        let shown = parse_manifest("x/inst.yaml", text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            shown.contains("Installation ns/i")
                && shown.contains("workflow].readyPostcondition")
                && shown.contains("invalid CEL expression"),
            "{shown}"
        );
        let valid = text.replace("self.(", "true");
        assert!(parse_manifest("x/inst.yaml", valid.as_bytes()).is_ok());
    }

    #[test]
    fn yaml_syntax_error_has_file_line_and_column() {
        let text = format!("{}---\nkind: [a, b\n", dataobject("a"));
        let err = parse_manifest("x/broken.yaml", text.as_bytes()).unwrap_err();
        assert_eq!(err.document, Some(1));
        assert_eq!(err.line, Some(8), "{err}");
        assert!(err.column.is_some());
        let shown = err.to_string();
        assert!(
            shown.starts_with("x/broken.yaml:8:")
                && shown.contains(": document 1: YAML syntax error: "),
            "{shown}"
        );
        assert!(!shown.contains(" at line "), "{shown}");

        let err = parse_manifest("y.yaml", b"a: 1\n  b: 2\n").unwrap_err();
        assert_eq!((err.document, err.line), (Some(0), Some(2)), "{err}");
    }

    #[test]
    fn error_positions_follow_lone_carriage_returns_and_characters() {
        // Found by fuzzing: YAML breaks lines at a lone `\r`, and serde_json counts bytes.
        let err = parse_manifest(
            "cr.yaml",
            b"kind: DataObject\rmetadata: {name: a}\ndata: [1,\n",
        )
        .unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
        let err = parse_manifest("cr.yaml", b"\r,").unwrap_err();
        assert!(err.line.unwrap_or(0) <= 2, "{err}");
        let err = parse_manifest("u.json", "\"ééé".as_bytes()).unwrap_err();
        assert_eq!(err.line, Some(1), "{err}");
        assert!(err.column.unwrap() <= 5, "{err}");
        let err = parse_manifest("v.json", "{\"é\": 1,, }".as_bytes()).unwrap_err();
        // The second comma is the 9th character (the 10th byte).
        assert_eq!(err.column, Some(9), "{err}");
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n";
        let err = parse_manifest("d.yaml", text.as_bytes()).unwrap_err();
        assert_eq!(err.line, Some(5), "{err}");
        assert!(err.message.contains("duplicate"), "{err}");
    }

    #[test]
    fn non_utf8_bytes_are_located() {
        let mut bytes = dataobject("a").into_bytes();
        bytes.extend_from_slice(b"---\nkind: ab\xFFc\n");
        let err = parse_manifest("bin.yaml", &bytes).unwrap_err();
        assert_eq!(err.line, Some(8), "{err}");
        assert_eq!(err.column, Some(9), "{err}");
        assert_eq!(err.document, Some(1));
        assert!(err.message.contains("not valid UTF-8"), "{err}");
        assert!(err.message.contains("0xFF"), "{err}");
        // A byte-order mark is not an error.
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(dataobject("a").as_bytes());
        assert_eq!(parse_manifest("bom.yaml", &bom).unwrap().objects.len(), 1);
    }

    #[test]
    fn json_files_hold_one_value_or_a_stream_or_a_list() {
        let one = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}"#;
        let parsed = parse_manifest("cm.json", one.as_bytes()).unwrap();
        assert_eq!(parsed.objects.len(), 1);
        assert_eq!(parsed.objects[0].key.to_string(), "ConfigMap default/a");

        let stream = format!("{one}\n\n{}", one.replace("\"a\"", "\"b\""));
        let parsed = parse_manifest("s.json", stream.as_bytes()).unwrap();
        let lines: Vec<_> = parsed
            .objects
            .iter()
            .map(|o| (o.document, o.line))
            .collect();
        assert_eq!(lines, [(0, 1), (1, 3)]);

        let list = format!(
            r#"{{"apiVersion": "v1", "kind": "List", "items": [{one}, {}]}}"#,
            one.replace("\"a\"", "\"c\"")
        );
        let parsed = parse_manifest("l.json", list.as_bytes()).unwrap();
        let items: Vec<_> = parsed
            .objects
            .iter()
            .map(|o| (o.key.name.as_str(), o.item))
            .collect();
        assert_eq!(items, [("a", Some(0)), ("c", Some(1))]);

        let err = parse_manifest(
            "bad.json",
            b"{\n  \"apiVersion\": \"v1\",\n  \"kind\" \"x\"\n}",
        )
        .unwrap_err();
        assert_eq!((err.line, err.document), (Some(3), Some(0)), "{err}");
        assert!(err.message.starts_with("JSON syntax error: "), "{err}");
    }

    #[test]
    fn same_object_twice_in_one_file_is_rejected() {
        let text = format!(
            "{}---\n{}---\n{}",
            dataobject("a"),
            dataobject("b"),
            dataobject("a")
        );
        let err = parse_manifest("dup.yaml", text.as_bytes()).unwrap_err();
        assert_eq!(err.document, Some(2));
        assert_eq!((err.line, err.column), (Some(18), Some(3)), "{err}");
        assert!(
            err.message
                .contains("DataObject default/a is defined twice"),
            "{err}"
        );
        assert!(err.message.contains("first in document 0"), "{err}");
        // Same name in different namespaces is fine.
        let other = dataobject("a").replace("  name: a\n", "  name: a\n  namespace: other\n");
        let text = format!("{}---\n{other}", dataobject("a"));
        assert_eq!(
            parse_manifest("ok.yaml", text.as_bytes())
                .unwrap()
                .objects
                .len(),
            2
        );
    }

    #[test]
    fn missing_type_meta_or_name_is_rejected() {
        let err =
            parse_manifest("n.yaml", b"kind: DataObject\nmetadata:\n  name: a\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("apiVersion"), "{err}");
        let err = parse_manifest(
            "n.yaml",
            b"apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  generateName: a-\n",
        )
        .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("metadata.name"), "{err}");
        assert_eq!(err.line, Some(3), "{err}");
        let err = parse_manifest("s.yaml", b"- a\n- b\n").unwrap_err();
        assert!(err.message.contains("must be a mapping"), "{err}");
        let err = parse_manifest(
            "m.yaml",
            b"apiVersion: appliance.landscaper-appliance.io/v1alpha1\nkind: ManifestFile\nmetadata:\n  name: x\n",
        )
        .unwrap_err();
        assert!(err.message.contains("managed by the appliance"), "{err}");
        let err = parse_manifest(
            "t.yaml",
            b"apiVersion: appliance.landscaper-appliance.io/v1alpha1\nkind: TransportArchive\nmetadata:\n  name: x\n",
        )
        .unwrap_err();
        assert!(
            err.message
                .contains("TransportArchive objects are managed by the appliance"),
            "{err}"
        );
        let err = parse_manifest(
            "u.yaml",
            b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
        )
        .unwrap_err();
        assert!(err.message.contains("Pod"), "{err}");
    }

    #[test]
    fn yaml_lists_expand_and_non_string_names_are_type_errors() {
        let text = format!(
            "apiVersion: v1\nkind: List\nitems:\n- {}\n- {}",
            dataobject("a").replace('\n', "\n  ").trim_end(),
            dataobject("b").replace('\n', "\n  ").trim_end()
        );
        let parsed = parse_manifest("list.yaml", text.as_bytes()).unwrap();
        let names: Vec<_> = parsed
            .objects
            .iter()
            .map(|o| (o.key.name.as_str(), o.item))
            .collect();
        assert_eq!(names, [("a", Some(0)), ("b", Some(1))]);
        let bad = text.replace("name: b", "name: 5");
        let err = parse_manifest("list.yaml", bad.as_bytes()).unwrap_err();
        assert_eq!(
            err.field.as_deref(),
            Some("items[1].metadata.name"),
            "{err}"
        );
        assert_eq!((err.line, err.column), (Some(13), Some(5)), "{err}");
        // YAML 1.1 reads `y` as a boolean, as Kubernetes does: a type error, not a missing name.
        let err = parse_manifest("y.yaml", dataobject("y").as_bytes()).unwrap_err();
        assert!(
            err.message.contains("metadata.name: invalid type: boolean"),
            "{err}"
        );
    }

    #[test]
    fn model_errors_name_the_field_and_its_line() {
        let text = format!(
            "{}---\n{INST}metadata:\n  name: i\nspec:\n  blueprint:\n    ref:\n      resourceName: bp\n  imports:\n    data:\n    - name: x\n",
            dataobject("a")
        );
        let err = parse_manifest("inst.yaml", text.as_bytes()).unwrap_err();
        assert_eq!(err.document, Some(1));
        assert_eq!(err.field.as_deref(), Some("spec.imports.data[0]"), "{err}");
        assert!(err.message.starts_with("spec.imports.data[0]: "), "{err}");
        // Points at the item, the deepest part of the path.
        assert_eq!((err.line, err.column), (Some(18), Some(5)), "{err}");

        let typed = format!("{INST}metadata:\n  name: i\nspec:\n  blueprint: 5\n");
        let err = parse_manifest("t.yaml", typed.as_bytes()).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("spec.blueprint"), "{err}");
        assert_eq!((err.line, err.column), (Some(6), Some(3)), "{err}");
    }

    #[test]
    fn unknown_fields_and_server_fields_become_warnings() {
        let text = format!(
            "{}  foo: 1\nstatus:\n  phase: Succeeded\n",
            inline_installation("i").replace(
                "metadata:\n",
                "metadata:\n  uid: abc\n  resourceVersion: \"7\"\n"
            )
        );
        let parsed = parse_manifest("w.yaml", text.as_bytes()).unwrap();
        let object = &parsed.objects[0].object;
        assert!(object.get("status").is_none());
        assert!(object["metadata"].get("uid").is_none());
        assert!(object["metadata"].get("resourceVersion").is_none());
        let messages: Vec<String> = parsed.warnings.iter().map(|w| w.to_string()).collect();
        assert!(
            messages
                .iter()
                .any(|m| m.contains("unknown field \"spec.foo\"") && m.starts_with("w.yaml:14:")),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m.contains("status is managed")),
            "{messages:?}"
        );
    }

    #[test]
    fn locate_field_finds_nested_keys_in_yaml_and_json() {
        let yaml = "a: 1\nspec:\n  x: 2\n  imports:\n    data:\n    - name: n\n      dataRef: d\n";
        assert_eq!(
            locate_field(yaml, "spec.imports.data[0].dataRef"),
            Some((7, 7))
        );
        assert_eq!(
            locate_field(yaml, "spec.imports.data[0].missing"),
            Some((6, 5))
        );
        assert_eq!(locate_field(yaml, "spec.imports.data[1]"), Some((5, 5)));
        let two = "items:\n- a: 1\n  name: x\n# c\n- a: 2\n  name: y\n";
        assert_eq!(locate_field(two, "items[1].name"), Some((6, 3)));
        assert_eq!(locate_field(yaml, "nothing"), None);
        let json = "{\n  \"spec\": {\"imports\": {\"data\": [{\"dataRef\": 1}]}}\n}";
        assert_eq!(
            locate_field(json, "spec.imports.data[0].dataRef"),
            Some((2, 34))
        );
        assert_eq!(
            locate_field("data:\n  my.key: x\n", "data[my.key]"),
            Some((2, 3))
        );
    }

    #[test]
    fn document_markers_split_exactly() {
        let chunks = split_yaml("a: 1\n--- # c\nb: |\n  ---x\n---\n---\n");
        let summary: Vec<_> = chunks
            .iter()
            .map(|c| (c.index, c.first_line, c.content_line))
            .collect();
        assert_eq!(
            summary,
            [(0, 1, Some(1)), (1, 2, Some(3)), (2, 5, None), (3, 6, None)]
        );
        assert!(is_document_start("---"));
        assert!(is_document_start("--- |\n"));
        assert!(!is_document_start("----\n"));
        assert!(!is_document_start(" ---\n"));
    }

    #[test]
    fn display_is_compiler_style() {
        let e = ManifestError {
            path: "a/b.yaml".into(),
            document: Some(2),
            line: Some(10),
            column: Some(4),
            field: Some("spec.x".into()),
            message: "spec.x: Required value".into(),
        };
        assert_eq!(
            e.to_string(),
            "a/b.yaml:10:4: document 2: spec.x: Required value"
        );
        assert_eq!(
            ManifestError::file("c.yaml", "gone").to_string(),
            "c.yaml: gone"
        );
        let status = e.to_status();
        assert_eq!(
            (status.document, status.line, status.column),
            (Some(2), Some(10), Some(4))
        );
    }

    fn fragment() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("---\n".to_string()),
            Just("...\n".to_string()),
            Just("apiVersion: landscaper.gardener.cloud/v1alpha1\n".to_string()),
            Just("kind: DataObject\n".to_string()),
            Just("metadata:\n  name: a\n".to_string()),
            Just("  namespace: b\n".to_string()),
            Just("data: {x: [1, 2}\n".to_string()),
            Just("- item\n".to_string()),
            Just("# comment\n".to_string()),
            Just("%YAML 1.2\n".to_string()),
            Just("\t\"quoted\": 'x'\n".to_string()),
            "[ -~\n\t]{0,20}",
            "\\PC{0,8}",
        ]
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics_and_locations_are_in_the_file(
            parts in proptest::collection::vec(fragment(), 0..12),
            json in proptest::bool::ANY,
            raw in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let mut bytes = parts.concat().into_bytes();
            bytes.extend_from_slice(&raw);
            let path = if json { "f.json" } else { "f.yaml" };
            let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
            match parse_manifest(path, &bytes) {
                Ok(parsed) => {
                    for object in &parsed.objects {
                        proptest::prop_assert!(object.line >= 1 && object.line <= lines);
                        proptest::prop_assert!(object.document < parsed.documents.max(1));
                    }
                }
                Err(error) => {
                    if let Some(line) = error.line {
                        proptest::prop_assert!(line >= 1 && line <= lines, "{error} ({lines} lines)");
                    }
                    proptest::prop_assert!(error.to_string().starts_with(path));
                }
            }
        }
    }

    #[test]
    fn yaml_messages_leave_out_the_parsers_advice_to_programmers() {
        let text = "a: 1\nb:\n  c: 1\n  c: 2\n";
        let error = serde_saphyr::from_str_with_options::<Value>(text, yaml_options()).unwrap_err();
        let message = yaml_message(&strip_location(&error.to_string()));
        assert_eq!(
            message, "duplicate key \"c\": a key may appear only once in a mapping",
            "from {error}"
        );
        assert_eq!(
            yaml_message(
                "duplicate mapping key: x, set DuplicateKeyPolicy in Options if acceptable at line 3 column 1"
            ),
            "duplicate key \"x\": a key may appear only once in a mapping at line 3 column 1"
        );
        assert_eq!(yaml_message("unclosed bracket '['"), "unclosed bracket '['");
    }

    #[test]
    fn strip_location_keeps_the_message() {
        assert_eq!(
            strip_location("unclosed bracket '[' at line 2, column 4"),
            "unclosed bracket '['"
        );
        assert_eq!(
            strip_location("expected `:` at line 3 column 10"),
            "expected `:`"
        );
        assert_eq!(strip_location("plain"), "plain");
        assert_eq!(strip_location("at line 1, column x"), "at line 1, column x");
    }
}

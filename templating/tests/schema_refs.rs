//! JSON schema validation of blueprint imports: `local://` and `blueprint://` references,
//! error messages with JSON pointers and schema paths.

use landscaper_templating::blueprint::{
    Blueprint, BlueprintFs, construct_imports, validate_import,
};
use landscaper_templating::schema::{CompiledSchema, ReferenceContext, resolve_references};
use serde_json::{Map, Value, json};

fn load(blueprint: &str, files: &[(&str, &str)]) -> Result<Blueprint, String> {
    let mut fs = BlueprintFs::new().with("blueprint.yaml", blueprint);
    for (p, c) in files {
        fs = fs.with(p, *c);
    }
    Blueprint::from_fs(fs).map_err(|e| e.to_string())
}

/// Schema problems do not stop loading (Landscaper finds them when it validates the value);
/// they are among the blueprint's problems.
fn schema_problems(blueprint: &str, files: &[(&str, &str)]) -> String {
    let bp = load(blueprint, files).unwrap();
    bp.problems()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

const HEAD: &str = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\n";

#[test]
fn blueprint_references_read_json_and_yaml_files() {
    let bp = load(
        &format!(
            "{HEAD}imports:\n- name: spec\n  schema:\n    $ref: blueprint://schemas/spec.json\n- name: count\n  schema:\n    $ref: blueprint://schemas/spec.json#/properties/count\n- name: yaml\n  schema:\n    $ref: blueprint:///schemas/other.yaml\n"
        ),
        &[
            (
                "schemas/spec.json",
                r#"{"type":"object","required":["count"],"properties":{"count":{"$ref":"local://Count"},"name":{"type":"string"}}}"#,
            ),
            (
                "schemas/other.yaml",
                "type: array\nitems:\n  type: boolean\n",
            ),
        ],
    );
    // local://Count is not defined: the error names the import, field and reference.
    let bp = bp.unwrap();
    let e = validate_import(&bp, "spec", &json!({})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "import \"spec\": validator creation failed: blueprint.yaml:5:3: imports[0].schema: import \"spec\": error resolving reference at /properties/count/$ref: type Count is not defined in local types"
    );

    let bp = load(
        &format!(
            "{HEAD}localTypes:\n  Count:\n    type: integer\n    minimum: 1\nimports:\n- name: spec\n  schema:\n    $ref: blueprint://schemas/spec.json\n- name: count\n  schema:\n    $ref: blueprint://schemas/spec.json#/properties/count\n- name: yaml\n  schema:\n    $ref: blueprint:///schemas/other.yaml\n"
        ),
        &[
            (
                "schemas/spec.json",
                r#"{"type":"object","required":["count"],"properties":{"count":{"$ref":"local://Count"},"name":{"type":"string"}}}"#,
            ),
            ("schemas/other.yaml", "type: array\nitems:\n  type: boolean\n"),
        ],
    )
    .unwrap();
    assert!(validate_import(&bp, "spec", &json!({"count": 2})).is_ok());
    let e = validate_import(&bp, "spec", &json!({"count": 0, "name": 5})).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"import "spec": /count: 0 is less than the minimum of 1 (schema path /properties/count/minimum); /name: 5 is not of type "string" (schema path /properties/name/type)"#
    );
    let e = validate_import(&bp, "count", &json!("x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"import "count": (root): "x" is not of type "integer" (schema path /type)"#
    );
    assert!(validate_import(&bp, "yaml", &json!([true, false])).is_ok());
    let e = validate_import(&bp, "yaml", &json!([true, "no"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("/1: \"no\" is not of type \"boolean\""),
        "{e}"
    );
}

#[test]
fn local_type_names_keep_their_case() {
    // The validator crate lower-cases URI authorities; references are resolved before it sees them.
    let bp = load(
        &format!(
            "{HEAD}localTypes:\n  MyType:\n    type: object\n    properties:\n      spec:\n        type: object\n        properties:\n          replicas:\n            type: integer\n  mytype:\n    type: string\nimports:\n- name: replicas\n  schema:\n    $ref: local://MyType\n"
        ),
        &[],
    )
    .unwrap();
    let e = construct_imports(
        &bp,
        &json!({"replicas": {"spec": {"replicas": "x"}}})
            .as_object()
            .unwrap()
            .clone(),
        &Map::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"import "replicas": /spec/replicas: "x" is not of type "integer" (schema path /properties/spec/properties/replicas/type)"#
    );
}

#[test]
fn reference_errors() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case<'_>] = &[
        (
            "$ref: blueprint://missing.json",
            &[],
            "unable to read local schema from missing.json: missing.json: file does not exist in the blueprint filesystem",
        ),
        (
            "$ref: blueprint://../outside.json",
            &[],
            "path leaves the blueprint filesystem",
        ),
        (
            "$ref: local://a/path",
            &[],
            "a path is not supported for local resources",
        ),
        (
            "$ref: blueprint://self.json",
            &[(
                "self.json",
                r#"{"items": {"$ref": "blueprint://self.json"}}"#,
            )],
            "cyclic references detected: reference \"blueprint://self.json\" is part of a cycle",
        ),
        (
            "$ref: blueprint://s.json#/definitions/nope",
            &[("s.json", r#"{"definitions": {}}"#)],
            "doesn't have a field \"nope\"",
        ),
        ("$ref: 5", &[], "invalid reference value: expected string"),
        ("type: nonsense", &[], "invalid schema:"),
    ];
    for (schema, files, want) in cases {
        let e = schema_problems(
            &format!("{HEAD}imports:\n- name: x\n  schema:\n    {schema}\n"),
            files,
        );
        assert!(e.contains(want), "{schema}: {e}");
        assert!(
            e.contains("imports[0].schema: import \"x\""),
            "{schema}: {e}"
        );
    }
}

#[test]
fn export_schemas_are_compiled_too() {
    let e = schema_problems(
        &format!("{HEAD}exports:\n- name: out\n  schema:\n    $ref: local://nope\n"),
        &[],
    );
    assert!(
        e.contains("exports[0].schema: export \"out\": error resolving reference at /$ref: type nope is not defined in local types"),
        "{e}"
    );
}

#[test]
fn schema_module_works_without_a_blueprint() {
    let local = [("t".to_string(), json!({"type": "string"}))].into();
    let ctx = ReferenceContext::new(&local, None);
    let s = json!({"type": "object", "additionalProperties": {"$ref": "local://t"}});
    assert_eq!(
        resolve_references(&s, &ctx).unwrap(),
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    let c = CompiledSchema::compile(&s, &ctx).unwrap();
    let v = c.validate(&json!({"a": "x", "b/c": 1})).unwrap_err();
    assert_eq!(v[0].instance_path, "/b~1c");
    assert_eq!(v[0].schema_path, "/additionalProperties/type");
    let e = CompiledSchema::compile(&json!({"$ref": "blueprint://x.json"}), &ctx).unwrap_err();
    assert_eq!(
        e.to_string(),
        "error resolving reference at /$ref: no filesystem defined to read a local schema"
    );
    let _ = Value::Null;
}

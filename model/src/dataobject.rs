//! `DataObject` (`types_dataobject.go`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::ObjectMeta;
use super::shared::some_value;

/// A piece of JSON data, imported or exported by Installations. There is no `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataObject {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Any JSON value; an explicit `null` is kept.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub data: Option<Value>,
}

impl DataObject {
    /// The data, with absent meaning `null` (as Landscaper reads it).
    pub fn data(&self) -> &Value {
        self.data.as_ref().unwrap_or(&Value::Null)
    }
}

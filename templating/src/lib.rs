//! Template engines of the Landscaper appliance: Go templates with sprig, Spiff, JSON schema, and
//! blueprint rendering. The engines arrive with issue 3; this crate holds their shared types.

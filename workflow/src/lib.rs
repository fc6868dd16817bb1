//! The appliance's workflow semantics (issue 19, after the Java Operator SDK's workflows):
//! CEL conditions ([`conditions`]) and the pure planner ([`plan`]) that the execution and
//! installation machines ask for each step's actions. The extension block itself is
//! `landscaper_model::workflow`.

pub mod conditions;
pub mod plan;

//! Landscaper's error values (`status.lastError`) and the two error classes of the phase
//! machines: a *normal* error repeats the current phase later, a *fatal* one ends the flow.

use landscaper_store::model::Error as StatusError;

/// An error as Landscaper records it: which operation, a short reason, a message, and codes.
/// The same value as `status.lastError` and the deployers' `DeployerError`.
pub use landscaper_store::model::Error as LsError;

/// The outcome of a phase handler that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseError {
    /// Retried: the phase stays, the error is recorded, the object is looked at again later.
    Normal(LsError),
    /// Ends the flow with `Failed` (or `DeleteFailed`).
    Fatal(LsError),
}

impl PhaseError {
    pub fn error(&self) -> &LsError {
        match self {
            PhaseError::Normal(e) | PhaseError::Fatal(e) => e,
        }
    }
}

/// `lserrors.TryUpdateLsError`: the new lastError, keeping the transition time while the
/// operation stays the same and the update time while nothing changed. `None` clears it.
pub fn updated_error(
    last: Option<&StatusError>,
    new: Option<&LsError>,
    now: &str,
) -> Option<StatusError> {
    let new = new?;
    let codes = new.codes.clone().filter(|c| !c.is_empty());
    let Some(last) = last else {
        return Some(StatusError {
            operation: new.operation.clone(),
            last_transition_time: Some(now.to_string()),
            last_update_time: Some(now.to_string()),
            reason: new.reason.clone(),
            message: new.message.clone(),
            codes,
        });
    };
    let mut out = StatusError {
        operation: new.operation.clone(),
        last_transition_time: last.last_transition_time.clone(),
        last_update_time: last.last_update_time.clone(),
        reason: new.reason.clone(),
        message: new.message.clone(),
        codes: codes.or_else(|| last.codes.clone().filter(|c| c.is_empty())),
    };
    if &out != last {
        out.last_update_time = Some(now.to_string());
    }
    if last.operation != new.operation {
        out.last_transition_time = Some(now.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_is_kept_while_the_operation_stays() {
        let first = updated_error(None, Some(&LsError::new("Op", "R", "m1")), "t1").unwrap();
        assert_eq!(first.last_transition_time.as_deref(), Some("t1"));
        let same = updated_error(Some(&first), Some(&LsError::new("Op", "R", "m1")), "t2").unwrap();
        assert_eq!(same, first, "an unchanged error keeps both times");
        let changed =
            updated_error(Some(&first), Some(&LsError::new("Op", "R", "m2")), "t3").unwrap();
        assert_eq!(changed.last_transition_time.as_deref(), Some("t1"));
        assert_eq!(changed.last_update_time.as_deref(), Some("t3"));
        let other =
            updated_error(Some(&changed), Some(&LsError::new("Op2", "R", "m2")), "t4").unwrap();
        assert_eq!(other.last_transition_time.as_deref(), Some("t4"));
        assert_eq!(updated_error(Some(&other), None, "t5"), None);
    }
}

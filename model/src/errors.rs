//! How errors are printed for people: one cause chain, each cause once.

use std::error::Error as StdError;

/// `error: cause: cause`, each cause once. Many errors repeat their source in their own text
/// (`#[error("reading {path}: {0}")]` over an `io::Error` that is also their `source()`), so a
/// plain walk over `source()` prints the same words two or three times (`… (os error 2): No such
/// file or directory (os error 2)`). A cause whose text the line already holds is skipped.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    chain_of(std::iter::successors(Some(error), |e| (*e).source()).map(|e| e.to_string()))
}

/// [`error_chain`] over the texts of the causes, outermost first.
pub fn chain_of(causes: impl IntoIterator<Item = String>) -> String {
    let mut line = String::new();
    for cause in causes {
        let cause = cause.trim();
        if cause.is_empty() || line.contains(cause) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(cause);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("opening the store {path}: {source}")]
        Open {
            path: String,
            #[source]
            source: Middle,
        },
    }

    #[derive(Debug, thiserror::Error)]
    #[error("i/o failure while opening the store file: {0}")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let io_text = io.to_string();
        let e = Outer::Open {
            path: "/x/store.redb".into(),
            source: Middle(io),
        };
        let line = error_chain(&e);
        assert_eq!(
            line,
            format!(
                "opening the store /x/store.redb: i/o failure while opening the store file: {io_text}"
            )
        );
        assert_eq!(line.matches(&io_text).count(), 1);
    }

    #[test]
    fn causes_not_in_the_text_are_appended() {
        assert_eq!(
            chain_of([
                "reading the token".to_string(),
                "permission denied".to_string()
            ]),
            "reading the token: permission denied"
        );
        assert_eq!(chain_of(["a: b".to_string(), "b".to_string()]), "a: b");
    }

    #[test]
    fn the_reason_is_not_repeated_when_it_is_the_operation() {
        let e = crate::shared::Error::new("ImportsSatisfied", "ImportsSatisfied", "x not found");
        assert_eq!(e.to_string(), "ImportsSatisfied: x not found");
        let e = crate::shared::Error::new("Op", "Reason", "m");
        assert_eq!(e.to_string(), "Op: Reason: m");
    }

    #[test]
    fn waiting_is_unfinished_subobjects_and_landscapers_waits() {
        use crate::constants::{ERR_FOR_INFO_ONLY, ERR_UNFINISHED};
        let e = |reason: &str, codes: &[&str]| {
            codes.iter().fold(
                crate::shared::Error::new("handlePhaseProgressing", reason, "m"),
                |e, c| e.with_code(c),
            )
        };
        assert!(e("JobIDFinished", &[ERR_UNFINISHED, ERR_FOR_INFO_ONLY]).is_waiting());
        assert!(e("AllPredecessorsFinished", &[]).is_waiting());
        assert!(e("SiblingImport", &[ERR_FOR_INFO_ONLY]).is_waiting());
        // Info-only is not waiting by itself: "has failed or missing deploy items" is a failure.
        assert!(!e("handlePhaseProgressing", &[ERR_FOR_INFO_ONLY]).is_waiting());
        assert!(!e("ImportsSatisfied", &[]).is_waiting());
    }
}

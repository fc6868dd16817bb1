//! The budget of one render (templates are untrusted input): evaluation steps, wall time, the
//! size of the output and of any single value, shared by both engines (Go templates and
//! Spiff) and passed down by blueprint rendering.
//!
//! Each engine enters the budget for the time of one execution ([`enter`]); functions that
//! build values (sprig's `until`, `repeat`, `printf`, spiff's list and string operations...)
//! check the size *before* they allocate ([`check_bytes`], [`check_items`]) and long loops
//! inside functions charge work ([`charge`]), so that a hostile template fails early with a
//! clear error instead of exhausting memory or time. A violation is also recorded
//! ([`exceeded`]), so that an engine reports it even when the template caught the function's
//! error (spiff's `||`).

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// Limits of one render. Every field is a hard bound; exceeding one fails the render with an
/// error naming the template and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderBudget {
    /// Evaluation steps: nodes walked, commands and loop iterations (Go templates), expression
    /// evaluations (Spiff), plus work charged by functions with long loops.
    pub max_steps: u64,
    /// Size in bytes of the output of one execution (or of one `include`/`tpl`).
    pub max_output_bytes: usize,
    /// Size in bytes of any single string a template builds (and of a value's printed form).
    pub max_value_bytes: usize,
    /// Number of items of any single list or map a template builds.
    pub max_list_items: usize,
    /// Wall time of one execution.
    pub max_duration: Duration,
    /// Bytes of all new values built over one execution (strings' bytes, 32 bytes a list
    /// item, 64 a map entry), counted when a function or operator returns them. Values are not
    /// tracked when dropped, so this bounds what a render can keep alive.
    pub max_alloc_bytes: u64,
}

impl Default for RenderBudget {
    fn default() -> Self {
        RenderBudget {
            max_steps: 10_000_000,
            max_output_bytes: 16 << 20,
            max_value_bytes: 16 << 20,
            max_list_items: 1 << 20,
            max_duration: Duration::from_secs(20),
            max_alloc_bytes: 192 << 20,
        }
    }
}

/// A budget violation: which limit, and what exceeded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetExceeded {
    /// The `RenderBudget` field (`max_value_bytes`, `max_duration`, ...).
    pub limit: &'static str,
    /// What exceeded it, as a sentence fragment naming the limit's value.
    pub message: String,
}

impl std::fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (render budget {})", self.message, self.limit)
    }
}

struct Active {
    budget: RenderBudget,
    deadline: Instant,
    /// Work units charged by functions (see [`charge`]).
    work: u64,
    /// Bytes charged by [`alloc`].
    allocated: u64,
    exceeded: Option<BudgetExceeded>,
}

thread_local! {
    static ACTIVE: RefCell<Vec<Active>> = const { RefCell::new(Vec::new()) };
}

/// Leaves the budget entered by [`enter`] when dropped.
#[must_use = "the budget is left when the guard is dropped"]
pub struct BudgetGuard {
    depth: usize,
}

impl Drop for BudgetGuard {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.borrow_mut().truncate(self.depth));
    }
}

/// Makes `budget` the current thread's budget until the guard is dropped. Entered again
/// inside (a nested render), the inner budget applies, with the earlier of both deadlines.
pub fn enter(budget: &RenderBudget) -> BudgetGuard {
    let now = Instant::now();
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let depth = a.len();
        let mut deadline = now
            .checked_add(budget.max_duration)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        if let Some(outer) = a.last() {
            deadline = deadline.min(outer.deadline);
        }
        a.push(Active {
            budget: *budget,
            deadline,
            work: 0,
            allocated: 0,
            exceeded: None,
        });
        BudgetGuard { depth }
    })
}

/// The current budget (the default outside any render).
pub fn current() -> RenderBudget {
    ACTIVE.with(|a| a.borrow().last().map(|x| x.budget).unwrap_or_default())
}

/// The first violation recorded since [`enter`].
pub fn exceeded() -> Option<BudgetExceeded> {
    ACTIVE.with(|a| a.borrow().last().and_then(|x| x.exceeded.clone()))
}

/// Records a violation found by an engine itself (its step or depth limit).
pub fn record(limit: &'static str, message: String) -> BudgetExceeded {
    fail(limit, message)
}

fn fail(limit: &'static str, message: String) -> BudgetExceeded {
    let e = BudgetExceeded { limit, message };
    ACTIVE.with(|a| {
        if let Some(x) = a.borrow_mut().last_mut()
            && x.exceeded.is_none()
        {
            x.exceeded = Some(e.clone());
        }
    });
    e
}

/// Fails when a string (or printed form) of `bytes` bytes would exceed `max_value_bytes`.
pub fn check_bytes(bytes: usize) -> Result<(), BudgetExceeded> {
    let max = current().max_value_bytes;
    if bytes > max {
        return Err(fail(
            "max_value_bytes",
            format!("a value of {bytes} bytes exceeds the limit of {max} bytes"),
        ));
    }
    Ok(())
}

/// [`check_bytes`] for a size computed in `u128` (products of untrusted numbers).
pub fn check_bytes_wide(bytes: u128) -> Result<(), BudgetExceeded> {
    check_bytes(usize::try_from(bytes).unwrap_or(usize::MAX))
}

/// Fails when a list or map of `items` items would exceed `max_list_items`.
pub fn check_items(items: u128) -> Result<(), BudgetExceeded> {
    let max = current().max_list_items;
    if items > max as u128 {
        return Err(fail(
            "max_list_items",
            format!("a list of {items} items exceeds the limit of {max} items"),
        ));
    }
    Ok(())
}

/// Fails when the output of `bytes` bytes exceeds `max_output_bytes`.
pub fn check_output(bytes: usize) -> Result<(), BudgetExceeded> {
    let max = current().max_output_bytes;
    if bytes > max {
        return Err(fail(
            "max_output_bytes",
            format!("output exceeds the limit of {max} bytes"),
        ));
    }
    Ok(())
}

/// Fails when the wall time of the render is over.
pub fn check_time() -> Result<(), BudgetExceeded> {
    let over = ACTIVE.with(|a| {
        a.borrow()
            .last()
            .map(|x| (Instant::now() > x.deadline).then_some(x.budget.max_duration))
    });
    match over {
        Some(Some(d)) => Err(fail(
            "max_duration",
            format!(
                "rendering takes longer than the limit of {} s",
                d.as_secs_f64()
            ),
        )),
        _ => Ok(()),
    }
}

/// A new value of about `bytes` bytes was built: counted against `max_alloc_bytes`.
pub fn alloc(bytes: u64) -> Result<(), BudgetExceeded> {
    let r = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(x) = a.last_mut() else {
            return Ok(());
        };
        x.allocated = x.allocated.saturating_add(bytes);
        if x.allocated > x.budget.max_alloc_bytes {
            return Err(x.budget.max_alloc_bytes);
        }
        Ok(())
    });
    r.map_err(|max| {
        fail(
            "max_alloc_bytes",
            format!("the values built exceed the limit of {max} bytes in total"),
        )
    })
}

/// Bytes [`alloc`] charges for a list of `items` items.
pub const LIST_ITEM_BYTES: u64 = 32;
/// Bytes [`alloc`] charges for a map of `entries` entries.
pub const MAP_ENTRY_BYTES: u64 = 64;

/// Work of a function's loop (items compared, bytes scanned...): counted against
/// `max_steps` (one step per 64 units) and, now and then, against the wall time.
pub fn charge(units: u64) -> Result<(), BudgetExceeded> {
    let r = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(x) = a.last_mut() else {
            return Ok(false);
        };
        let before = x.work;
        x.work = x.work.saturating_add(units);
        if x.work / 64 > x.budget.max_steps {
            return Err(x.budget.max_steps);
        }
        Ok(before >> 16 != x.work >> 16)
    });
    match r {
        Err(max) => Err(fail(
            "max_steps",
            format!("functions' work exceeds the limit of {max} steps"),
        )),
        Ok(true) => check_time(),
        Ok(false) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_budgets_restore_and_record() {
        assert_eq!(current(), RenderBudget::default());
        let small = RenderBudget {
            max_value_bytes: 10,
            ..RenderBudget::default()
        };
        {
            let _g = enter(&small);
            assert!(check_bytes(10).is_ok());
            let e = check_bytes(11).unwrap_err();
            assert_eq!(e.limit, "max_value_bytes");
            assert_eq!(exceeded(), Some(e));
            {
                let _inner = enter(&RenderBudget::default());
                assert!(exceeded().is_none());
                assert!(check_bytes(11).is_ok());
            }
            assert_eq!(current(), small);
            assert!(check_items(2 << 20).is_err());
        }
        assert_eq!(current(), RenderBudget::default());
        assert!(exceeded().is_none());
    }

    #[test]
    fn deadline_and_work() {
        let b = RenderBudget {
            max_duration: Duration::ZERO,
            max_steps: 10,
            ..RenderBudget::default()
        };
        let _g = enter(&b);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(check_time().unwrap_err().limit, "max_duration");
        assert_eq!(charge(64 * 11).unwrap_err().limit, "max_steps");
    }

    #[test]
    fn allocations_add_up() {
        let b = RenderBudget {
            max_alloc_bytes: 100,
            ..RenderBudget::default()
        };
        let _g = enter(&b);
        assert!(alloc(60).is_ok());
        assert!(alloc(40).is_ok());
        assert_eq!(alloc(1).unwrap_err().limit, "max_alloc_bytes");
    }
}

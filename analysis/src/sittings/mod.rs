//! Across sittings (a sitting: one invocation of the runner, one run
//! directory under `results/`): each comparison's history, the coverage
//! check and the pre-registered coverage plan, when a sitting measured, the
//! runs index (`results/index.html`) and the results digest's tables.

pub mod coverage;
pub mod coverage_plan;
pub mod digest;
pub mod history;
pub mod runs_index;
pub mod span;

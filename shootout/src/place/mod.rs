//! Place: where each process of a row runs. [`placement::Placement`] picks
//! the hosts once (this machine, the runner's network namespaces, or remote
//! hosts over ssh); every difference between host kinds after that is a
//! method of [`host::Host`] or [`running::Running`].

pub mod affinity;
pub mod cgroup;
pub mod connect;
pub mod exchange;
pub mod host;
pub mod netns;
pub mod orphans;
pub mod placement;
pub mod procs;
pub mod remote;
pub mod running;
pub mod ssh;
pub mod ssh_terminal;

//! Checks: the app answers as the twins must (TechEmpower-style, from each
//! load host), and the server's count matches what loadgen acknowledged.

pub mod counter;
pub mod verify;

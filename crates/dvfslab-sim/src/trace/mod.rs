//! Recorded kernel traces: reading ftrace text into tables ([`read`]) and replaying a governor
//! against what a recording's kernel decided ([`replay`]).

pub mod read;
mod recorded;
pub mod replay;

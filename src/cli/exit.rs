//! The exit-code contract of every command (README "Exit codes", `crawlsieve --help`):
//!
//! | code | meaning |
//! |---:|---|
//! | 0 | done |
//! | 1 | failed while running (an error not listed below) |
//! | 2 | usage: a flag, value or combination of them is wrong (nothing was done) |
//! | 3 | input: a file, state file or input record cannot be read or is malformed |
//! | 4 | unreachable: Redis, Kafka or Chromium could not be reached or started |
//! | 5 | partial: the command finished, but some items were not done (pages that could not be rendered or were refused; the summary says how many) |
//!
//! A command marks an error with one of the constructors here ([`usage`], [`input`],
//! [`partial`]); [`code`] reads the mark back, and recognises unreachable services by their
//! error types, so a message needs no code of its own.

use std::fmt;

/// An exit status of the contract above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 1: failed while running.
    Failed = 1,
    /// 2: a usage error.
    Usage = 2,
    /// 3: unreadable or malformed input.
    Input = 3,
    /// 4: a service unreachable.
    Unreachable = 4,
    /// 5: finished, some items not done.
    Partial = 5,
}

/// An error that carries its exit status; its message is the one the user reads.
#[derive(Debug)]
pub struct Coded {
    /// The status the process exits with.
    pub exit: Exit,
    message: String,
}

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Coded {}

fn coded(exit: Exit, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Coded {
        exit,
        message: message.into(),
    })
}

/// A usage error (exit 2): say which flag and what to do.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    coded(Exit::Usage, message)
}

/// An input error (exit 3): say which file or record and what is wrong.
pub fn input(message: impl Into<String>) -> anyhow::Error {
    coded(Exit::Input, message)
}

/// A service that could not be reached or started (exit 4).
pub fn unreachable(message: impl Into<String>) -> anyhow::Error {
    coded(Exit::Unreachable, message)
}

/// The command finished, with some items not done (exit 5).
pub fn partial(message: impl Into<String>) -> anyhow::Error {
    coded(Exit::Partial, message)
}

/// The exit status for `e`: its mark when it has one, 4 for Redis or Kafka unreachable, 1
/// otherwise.
pub fn code(e: &anyhow::Error) -> i32 {
    for c in e.chain() {
        if let Some(c) = c.downcast_ref::<Coded>() {
            return c.exit as i32;
        }
    }
    for c in e.chain() {
        if let Some(r) = c.downcast_ref::<crate::redis_filter::RedisFilterError>() {
            use crate::redis_filter::RedisFilterError as R;
            return match r {
                R::Unavailable { .. } | R::Refused(_) => Exit::Unreachable,
                // Flags that do not fit the namespace, or name a wrong one: usage.
                R::Params(_) | R::Mismatch { .. } | R::Exists(_) => Exit::Usage,
                // A namespace that is not there, a snapshot that cannot be read or used.
                R::NotFound(_) | R::Snapshot(_) | R::Io(_) | R::Corrupt(_) => Exit::Input,
                R::Server(_) => Exit::Failed,
            } as i32;
        }
        if let Some(c) = c.downcast_ref::<crate::config::ConfigError>() {
            return match c {
                crate::config::ConfigError::Read { .. } | crate::config::ConfigError::Files(_) => {
                    Exit::Input
                }
                crate::config::ConfigError::Invalid(_) => Exit::Usage,
            } as i32;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::IsADirectory
                    | std::io::ErrorKind::NotADirectory
                    | std::io::ErrorKind::InvalidData
            ) {
                return Exit::Input as i32;
            }
        }
        if let Some(r) = c.downcast_ref::<::redis::RedisError>() {
            if r.is_connection_refusal() || r.is_timeout() || r.is_io_error() {
                return Exit::Unreachable as i32;
            }
        }
        if let Some(k) = c.downcast_ref::<rdkafka::error::KafkaError>() {
            if matches!(
                k.rdkafka_error_code(),
                Some(
                    rdkafka::types::RDKafkaErrorCode::AllBrokersDown
                        | rdkafka::types::RDKafkaErrorCode::BrokerTransportFailure
                        | rdkafka::types::RDKafkaErrorCode::MessageTimedOut
                        | rdkafka::types::RDKafkaErrorCode::OperationTimedOut
                )
            ) {
                return Exit::Unreachable as i32;
            }
        }
    }
    Exit::Failed as i32
}

/// `e`'s message and its causes, `: `-separated, each cause said once: an error whose own
/// message already quotes its cause (`scope file x: No such file or directory`) is not followed
/// by that cause again.
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let s = c.to_string();
        // Case aside: "connection refused (…)" already says "Connection refused (os error 111)".
        let said = out.to_ascii_lowercase();
        let core = s
            .to_ascii_lowercase()
            .split(" (os error")
            .next()
            .unwrap_or("")
            .to_string();
        if s.is_empty() || said.contains(&s.to_ascii_lowercase()) || said.contains(&core) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn marks_survive_context_and_unmarked_errors_are_1() {
        let e = Err::<(), _>(usage("--base needs a scheme"))
            .context("reading flags")
            .unwrap_err();
        assert_eq!(code(&e), 2);
        assert_eq!(code(&input("x")), 3);
        assert_eq!(code(&partial("2 pages not rendered")), 5);
        assert_eq!(code(&anyhow::anyhow!("boom")), 1);
        let refused =
            ::redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(code(&anyhow::Error::new(refused)), 4);
    }

    #[test]
    fn a_cause_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(io).context(format!(
            "scope file s.txt: {}",
            std::io::Error::from(std::io::ErrorKind::NotFound)
        ));
        let m = message(&e);
        assert_eq!(m.matches("not found").count(), 1, "{m}");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&e), "outer: inner");
    }
}

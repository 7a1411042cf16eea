//! The syntax of the ids that cross process boundaries and become message subjects, key-value
//! keys, message ids or folder names: run ids, dialogue ids and model names. One bounded syntax
//! each, checked where an id enters (the command line, a job, a record, a request header, a
//! configuration, a manifest read back), so nothing downstream has to.
//!
//! * A run id is one subject token, one key-value key segment and one folder name: 1 to
//!   [`RUN_ID_MAX`] ASCII letters, digits, `-`, `_` or `=`, starting with a letter or digit (so it
//!   is never a flag, a hidden file, `.` or `..`).
//! * A dialogue id (`telecom_package/0007/sim-strong/r0`) is 1 to [`DIALOGUE_ID_MAX`] bytes with
//!   no control character.
//! * A model name is 1 to [`NAME_MAX`] ASCII letters, digits, `-`, `_`, `.` or `:`, starting
//!   with a letter or digit, without `..` (`gpt-4.1-mini`, `qwen2.5:7b`): it is a subject token
//!   ([`super::subject_token`]), a part of dialogue ids and of folder paths, and a cell of
//!   Markdown and HTML tables, so it holds no `/`, space or markup.

use serde::{Deserialize, Deserializer};

/// Most characters of a run id.
pub const RUN_ID_MAX: usize = 128;
/// Most bytes of a dialogue id.
pub const DIALOGUE_ID_MAX: usize = 512;
/// Most characters of a model name.
pub const NAME_MAX: usize = 128;

/// An id that does not follow its syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// A run id.
    #[error(
        "run id `{shown}`: {why}; expected 1 to {RUN_ID_MAX} ASCII letters, digits, `-`, `_` or `=`, starting with a letter or digit"
    )]
    Run {
        /// The id, cut to a readable length.
        shown: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A dialogue id.
    #[error(
        "dialogue id `{shown}`: {why}; expected 1 to {DIALOGUE_ID_MAX} bytes without control characters"
    )]
    Dialogue {
        /// The id, cut to a readable length.
        shown: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A model name.
    #[error(
        "model name `{shown}`: {why}; expected 1 to {NAME_MAX} ASCII letters, digits, `-`, `_`, `.` or `:`, starting with a letter or digit, without `..`"
    )]
    Name {
        /// The name, cut to a readable length.
        shown: String,
        /// What is wrong.
        why: &'static str,
    },
}

/// At most 60 characters of `id` for a message, control characters escaped, with its length
/// when cut.
fn shown(id: &str) -> String {
    let mut out: String = id.chars().take(60).flat_map(char::escape_debug).collect();
    let n = id.chars().count();
    if n > 60 {
        out.push_str(&format!("... ({n} characters)"));
    }
    out
}

/// Checks a run id.
pub fn check_run_id(id: &str) -> Result<(), IdError> {
    let why = if id.is_empty() {
        "empty"
    } else if id.len() > RUN_ID_MAX {
        "too long"
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'='))
    {
        "a character outside the allowed set"
    } else if !id.as_bytes()[0].is_ascii_alphanumeric() {
        "does not start with a letter or digit"
    } else {
        return Ok(());
    };
    Err(IdError::Run {
        shown: shown(id),
        why,
    })
}

/// Checks a dialogue id.
pub fn check_dialogue_id(id: &str) -> Result<(), IdError> {
    let why = if id.is_empty() {
        "empty"
    } else if id.len() > DIALOGUE_ID_MAX {
        "too long"
    } else if id.chars().any(char::is_control) {
        "a control character"
    } else {
        return Ok(());
    };
    Err(IdError::Dialogue {
        shown: shown(id),
        why,
    })
}

/// Checks a model name.
pub fn check_name(name: &str) -> Result<(), IdError> {
    let why = if name.is_empty() {
        "empty"
    } else if name.len() > NAME_MAX {
        "too long"
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
    {
        "a character outside the allowed set"
    } else if !name.as_bytes()[0].is_ascii_alphanumeric() {
        "not starting with a letter or digit"
    } else if name.contains("..") {
        "`..` in it"
    } else {
        return Ok(());
    };
    Err(IdError::Name {
        shown: shown(name),
        why,
    })
}

/// Deserializes a run id, refusing one that does not follow the syntax
/// (`#[serde(deserialize_with = "...")]`).
pub fn run_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    check_run_id(&id).map_err(serde::de::Error::custom)?;
    Ok(id)
}

/// Deserializes a dialogue id, refusing one that does not follow the syntax.
pub fn dialogue_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    check_dialogue_id(&id).map_err(serde::de::Error::custom)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_one_bounded_token() {
        for ok in [
            "20261122-013000-s42",
            "a",
            "R=1_x-2",
            &"a".repeat(RUN_ID_MAX),
        ] {
            assert_eq!(check_run_id(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "a.b",
            "a b",
            "a>",
            "a*",
            "../../x",
            "/abs",
            "-flag",
            "_hidden",
            "é",
            "a\nb",
            &"a".repeat(RUN_ID_MAX + 1),
            &"x".repeat(4100),
        ] {
            assert!(check_run_id(bad).is_err(), "{bad:?} accepted");
        }
        let long = check_run_id(&"x".repeat(4100)).unwrap_err().to_string();
        assert!(
            long.contains("(4100 characters)") && long.len() < 300,
            "{long}"
        );
    }

    #[test]
    fn dialogue_ids_and_names_are_bounded_and_printable() {
        assert!(check_dialogue_id("telecom_package/0007/gpt-4.1 mini/r0").is_ok());
        assert!(check_dialogue_id("").is_err());
        assert!(check_dialogue_id("a\u{0}b").is_err());
        assert!(check_dialogue_id(&"d".repeat(DIALOGUE_ID_MAX + 1)).is_err());
        for ok in ["gpt-4.1-mini", "qwen2.5:7b", "sim_judge-3", "A"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        assert!(check_name(&"m".repeat(NAME_MAX)).is_ok());
        for (bad, why) in [
            ("gpt-4.1 mini", "a character outside the allowed set"),
            ("a/../b", "a character outside the allowed set"),
            ("<b>x</b>", "a character outside the allowed set"),
            ("a\tb", "a character outside the allowed set"),
            ("modèle", "a character outside the allowed set"),
            ("-m", "not starting with a letter or digit"),
            (".hidden", "not starting with a letter or digit"),
            ("a..b", "`..` in it"),
            ("", "empty"),
        ] {
            let error = check_name(bad).unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
        assert!(check_name(&"m".repeat(NAME_MAX + 1)).is_err());
    }

    #[test]
    fn ids_are_checked_when_decoded() {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(deserialize_with = "run_id")]
            run_id: String,
        }
        let ok: Head = serde_json::from_str(r#"{"run_id": "r1"}"#).expect("valid");
        assert_eq!(ok.run_id, "r1");
        let bad = serde_json::from_str::<Head>(r#"{"run_id": "../x"}"#)
            .err()
            .expect("refused");
        assert!(bad.to_string().contains("run id `../x`"), "{bad}");
    }
}

//! The output formats, written one example (or pair) at a time to a buffered writer.

use super::Format;
use super::example::{Message, Role};
use serde::Serialize;
use std::io::{self, Write};

#[derive(Serialize)]
struct OpenaiMessage<'a> {
    content: &'a str,
    role: &'a str,
}

#[derive(Serialize)]
struct ShareGptTurn<'a> {
    from: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct OpenaiExample<'a> {
    messages: Vec<OpenaiMessage<'a>>,
}

#[derive(Serialize)]
struct ShareGptExample<'a> {
    conversations: Vec<ShareGptTurn<'a>>,
}

#[derive(Serialize)]
struct OpenaiInput<'a> {
    messages: Vec<OpenaiMessage<'a>>,
}

/// OpenAI's preference fine-tuning format.
#[derive(Serialize)]
struct OpenaiPreference<'a> {
    input: OpenaiInput<'a>,
    preferred_output: [OpenaiMessage<'a>; 1],
    non_preferred_output: [OpenaiMessage<'a>; 1],
}

/// TRL's conversational preference format, with where each side comes from (columns TRL
/// leaves alone) so that a pair can be checked against its records.
#[derive(Serialize)]
struct TrlPreference<'a> {
    prompt: Vec<OpenaiMessage<'a>>,
    chosen: [OpenaiMessage<'a>; 1],
    rejected: [OpenaiMessage<'a>; 1],
    #[serde(flatten)]
    audit: &'a Audit<'a>,
}

/// Where a preference pair's two answers come from: each one's dialogue and Logic, the turn,
/// and for a fork's branches the dialogue they were forked from.
#[derive(Debug, Clone, Serialize)]
pub struct Audit<'a> {
    /// The chosen answer's Logic (100).
    pub chosen_logic: f64,
    /// The rejected answer's Logic (below `--max-rejected-logic`).
    pub rejected_logic: f64,
    /// The chosen answer's dialogue.
    pub chosen_dialogue: &'a str,
    /// The rejected answer's dialogue.
    pub rejected_dialogue: &'a str,
    /// The turn (1-based) both answer.
    pub turn: u32,
    /// The stored dialogue a fork's branches were forked from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<&'a str>,
}

fn openai<'a>(messages: &'a [Message<'a>]) -> Vec<OpenaiMessage<'a>> {
    messages
        .iter()
        .map(|m| OpenaiMessage {
            content: m.content,
            role: m.role.openai(),
        })
        .collect()
}

fn assistant(content: &str) -> [OpenaiMessage<'_>; 1] {
    [OpenaiMessage {
        content,
        role: Role::Assistant.openai(),
    }]
}

/// Writes examples or preference pairs in one format. The ShareGPT array is written as
/// `serde_json::to_string_pretty` writes a whole array (plus a final line break), one element
/// at a time; every other format is one JSON object per line.
pub struct Writer<W: Write> {
    format: Format,
    out: W,
    written: usize,
}

impl<W: Write> Writer<W> {
    /// Starts the output (the ShareGPT array's `[`).
    pub fn new(format: Format, mut out: W) -> io::Result<Writer<W>> {
        if format == Format::Sharegpt {
            out.write_all(b"[")?;
        }
        Ok(Writer {
            format,
            out,
            written: 0,
        })
    }

    /// Writes one example: `context`, then `answer` as the agent's message.
    pub fn example(&mut self, context: &[Message<'_>], answer: &str) -> io::Result<()> {
        let answer = Message {
            role: Role::Assistant,
            content: answer,
        };
        let all = || context.iter().chain(std::iter::once(&answer));
        match self.format {
            Format::Openai => {
                let messages = all()
                    .map(|m| OpenaiMessage {
                        content: m.content,
                        role: m.role.openai(),
                    })
                    .collect();
                serde_json::to_writer(&mut self.out, &OpenaiExample { messages })?;
                self.out.write_all(b"\n")?;
            }
            Format::Sharegpt | Format::SharegptJsonl => {
                let conversations = all()
                    .map(|m| ShareGptTurn {
                        from: m.role.sharegpt(),
                        value: m.content,
                    })
                    .collect();
                let example = ShareGptExample { conversations };
                if self.format == Format::Sharegpt {
                    // An element of the pretty array: on its own line, indented one level.
                    self.out
                        .write_all(if self.written == 0 { b"\n  " } else { b",\n  " })?;
                    serde_json::to_writer_pretty(Indent(&mut self.out), &example)?;
                } else {
                    serde_json::to_writer(&mut self.out, &example)?;
                    self.out.write_all(b"\n")?;
                }
            }
            Format::Dpo | Format::DpoTrl => {
                return Err(io::Error::other("a preference format writes pairs"));
            }
        }
        self.written += 1;
        Ok(())
    }

    /// Writes one preference pair: the prompt, the chosen and the rejected answers (`dpo-trl`
    /// with their `audit`; OpenAI's format takes no other key).
    pub fn pair(
        &mut self,
        prompt: &[Message<'_>],
        chosen: &str,
        rejected: &str,
        audit: &Audit<'_>,
    ) -> io::Result<()> {
        match self.format {
            Format::Dpo => serde_json::to_writer(
                &mut self.out,
                &OpenaiPreference {
                    input: OpenaiInput {
                        messages: openai(prompt),
                    },
                    preferred_output: assistant(chosen),
                    non_preferred_output: assistant(rejected),
                },
            )?,
            Format::DpoTrl => serde_json::to_writer(
                &mut self.out,
                &TrlPreference {
                    prompt: openai(prompt),
                    chosen: assistant(chosen),
                    rejected: assistant(rejected),
                    audit,
                },
            )?,
            _ => return Err(io::Error::other("an example format writes examples")),
        }
        self.out.write_all(b"\n")?;
        self.written += 1;
        Ok(())
    }

    /// How many examples or pairs were written.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Ends the output (the ShareGPT array's `]`) and flushes it.
    pub fn finish(mut self) -> io::Result<W> {
        if self.format == Format::Sharegpt {
            self.out
                .write_all(if self.written == 0 { b"]\n" } else { b"\n]\n" })?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Indents every line after the first by two spaces (JSON text holds no raw line break inside
/// a string, so every line break is the pretty printer's).
struct Indent<W: Write>(W);

impl<W: Write> Write for Indent<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.0.write_all(&rest[..=i])?;
            self.0.write_all(b"  ")?;
            rest = &rest[i + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn examples() -> Vec<Vec<Message<'static>>> {
        let m = |role, content| Message { role, content };
        vec![
            vec![m(Role::System, "sys \"q\"\nline"), m(Role::User, "hi")],
            vec![
                m(Role::System, "sys"),
                m(Role::User, "a"),
                m(Role::Assistant, "b"),
                m(Role::User, "c\u{e9}"),
            ],
        ]
    }

    fn render(format: Format, n: usize) -> String {
        let mut w = Writer::new(format, Vec::new()).unwrap();
        for ex in examples().iter().take(n) {
            w.example(ex, "{\"finals\": 1}").unwrap();
        }
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    /// What the in-memory export built with `json!` (keys sorted).
    fn as_json(ex: &[Message<'_>], sharegpt: bool) -> Value {
        let mut all: Vec<Value> = ex
            .iter()
            .map(|m| {
                if sharegpt {
                    json!({"from": m.role.sharegpt(), "value": m.content})
                } else {
                    json!({"role": m.role.openai(), "content": m.content})
                }
            })
            .collect();
        if sharegpt {
            all.push(json!({"from": "gpt", "value": "{\"finals\": 1}"}));
            json!({ "conversations": all })
        } else {
            all.push(json!({"role": "assistant", "content": "{\"finals\": 1}"}));
            json!({ "messages": all })
        }
    }

    #[test]
    fn formats_match_the_whole_document_rendering() {
        for n in 0..=2 {
            let exs = examples();
            let expected: String = exs
                .iter()
                .take(n)
                .map(|e| as_json(e, false).to_string() + "\n")
                .collect();
            assert_eq!(render(Format::Openai, n), expected);
            let all: Vec<Value> = exs.iter().take(n).map(|e| as_json(e, true)).collect();
            assert_eq!(
                render(Format::Sharegpt, n),
                serde_json::to_string_pretty(&all).unwrap() + "\n"
            );
            let lines: String = all.iter().map(|v| v.to_string() + "\n").collect();
            assert_eq!(render(Format::SharegptJsonl, n), lines);
        }
    }

    #[test]
    fn pairs_in_both_preference_shapes() {
        let prompt = &examples()[1];
        let audit = Audit {
            chosen_logic: 100.0,
            rejected_logic: 40.0,
            chosen_dialogue: "s/0001/m/r0/f2/a/s0",
            rejected_dialogue: "s/0001/m/r0/f2/b/s3",
            turn: 2,
            parent: Some("s/0001/m/r0"),
        };
        let mut w = Writer::new(Format::Dpo, Vec::new()).unwrap();
        w.pair(prompt, "good", "bad", &audit).unwrap();
        assert!(w.example(prompt, "x").is_err());
        let v: Value = serde_json::from_slice(&w.finish().unwrap()).unwrap();
        assert_eq!(v["input"]["messages"].as_array().unwrap().len(), 4);
        assert_eq!(v["input"]["messages"][3]["content"], "c\u{e9}");
        assert_eq!(
            v["preferred_output"],
            json!([{"role": "assistant", "content": "good"}])
        );
        assert_eq!(
            v["non_preferred_output"],
            json!([{"role": "assistant", "content": "bad"}])
        );
        // OpenAI's shape takes no other key.
        assert_eq!(v.as_object().unwrap().len(), 3);
        let mut w = Writer::new(Format::DpoTrl, Vec::new()).unwrap();
        w.pair(prompt, "good", "bad", &audit).unwrap();
        let v: Value = serde_json::from_slice(&w.finish().unwrap()).unwrap();
        assert_eq!(v["prompt"][0], json!({"role": "system", "content": "sys"}));
        assert_eq!(
            v["chosen"],
            json!([{"role": "assistant", "content": "good"}])
        );
        assert_eq!(
            v["rejected"],
            json!([{"role": "assistant", "content": "bad"}])
        );
        assert_eq!(
            (&v["chosen_logic"], &v["rejected_logic"], &v["turn"]),
            (&json!(100.0), &json!(40.0), &json!(2))
        );
        assert_eq!(v["parent"], "s/0001/m/r0");
        assert_eq!(v["rejected_dialogue"], "s/0001/m/r0/f2/b/s3");
    }
}

//! Preference pairs (`--format dpo`, `dpo-trl`): candidates (every scored answer) gathered in
//! one pass over the records, grouped by context, and the pair chosen in each group, or why
//! there is none.
//!
//! Memory: a candidate is 24 bytes (the context key, the record's byte offset, the model, the
//! repeat, the turn, the Logic). At most [`CHUNK`] candidates are held in memory (24 MiB); more
//! are sorted by key and written to anonymous temporary files (in the system's temporary
//! folder, removed when closed), then merged, so memory does not grow with the run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};

/// Candidates held in memory before they are sorted and written to a temporary file.
pub const CHUNK: usize = 1 << 20;

/// The Logic of a chosen answer, in hundredths.
pub const CHOSEN: u16 = 10_000;

/// The mark of an answer that is neither chosen nor rejected (a valid answer below Logic 100
/// and not below the rejection threshold): kept so that the contexts where models answered are
/// all counted, and why the others have no pair.
pub const NEITHER: u16 = CHOSEN + 1;

/// Why a context (a case at a turn, everything the agent saw the same) has no pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpaired {
    /// Every answer there is one model's: the other models' dialogues of the case had gone
    /// apart before the turn (the customer answers what each agent said), or ended, or were
    /// left out.
    OneModel,
    /// Several models answered, none with Logic 100.
    NoChosen,
    /// Several models answered and one with Logic 100, none below the rejection threshold.
    NoRejected,
    /// The answers with Logic 100 and those below the threshold are all one model's.
    SameModel,
}

/// An agent turn that can be one side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    /// The context: a hash of the case, the turn number and everything the agent saw.
    pub key: u64,
    /// Byte offset of its record's line in dialogues.jsonl.
    pub offset: u64,
    /// The model under test, as an index in the export's model table.
    pub model: u16,
    /// The record's repeat.
    pub repeat: u16,
    /// The index of the turn in the record.
    pub turn: u16,
    /// Its Logic in hundredths, rounded down: [`CHOSEN`] for a chosen answer.
    pub logic: u16,
}

const BYTES: usize = 24;

impl Candidate {
    fn encode(&self) -> [u8; BYTES] {
        let mut b = [0; BYTES];
        b[..8].copy_from_slice(&self.key.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..18].copy_from_slice(&self.model.to_le_bytes());
        b[18..20].copy_from_slice(&self.repeat.to_le_bytes());
        b[20..22].copy_from_slice(&self.turn.to_le_bytes());
        b[22..24].copy_from_slice(&self.logic.to_le_bytes());
        b
    }

    fn decode(b: &[u8; BYTES]) -> Candidate {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Candidate {
            key: u64_at(0),
            offset: u64_at(8),
            model: u16_at(16),
            repeat: u16_at(18),
            turn: u16_at(20),
            logic: u16_at(22),
        }
    }
}

/// The candidates of an export, sorted by key in chunks of `chunk`, spilled to temporary files
/// beyond the first chunk.
#[derive(Debug)]
pub struct Candidates {
    chunk: usize,
    held: Vec<Candidate>,
    runs: Vec<File>,
    count: usize,
}

impl Candidates {
    /// No candidates yet; at most `chunk` (at least 1) held in memory.
    pub fn new(chunk: usize) -> Candidates {
        Candidates {
            chunk: chunk.max(1),
            held: Vec::new(),
            runs: Vec::new(),
            count: 0,
        }
    }

    /// Adds a candidate (spilling the chunk when it is full).
    pub fn push(&mut self, c: Candidate) -> io::Result<()> {
        self.held.push(c);
        self.count += 1;
        if self.held.len() >= self.chunk {
            self.spill()?;
        }
        Ok(())
    }

    /// Whether no candidate was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Temporary files written so far.
    pub fn spilled(&self) -> usize {
        self.runs.len()
    }

    fn spill(&mut self) -> io::Result<()> {
        self.held.sort_unstable();
        let mut out = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
        for c in &self.held {
            out.write_all(&c.encode())?;
        }
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        self.runs.push(file);
        self.held.clear();
        Ok(())
    }

    /// Calls `f` with each group of candidates sharing a key, in key order (the candidates of
    /// a group in their own order), until `f` fails.
    pub fn groups<E: From<io::Error>>(
        mut self,
        mut f: impl FnMut(&[Candidate]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.held.sort_unstable();
        let mut sources: Vec<Source> = self
            .runs
            .into_iter()
            .map(|f| Source::File(BufReader::with_capacity(1 << 16, f)))
            .collect();
        sources.push(Source::Held(self.held.into_iter()));
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(c) = s.next()? {
                heap.push(Reverse((c, i)));
            }
        }
        let mut group: Vec<Candidate> = Vec::new();
        while let Some(Reverse((c, i))) = heap.pop() {
            if group.first().is_some_and(|g| g.key != c.key) {
                f(&group)?;
                group.clear();
            }
            group.push(c);
            if let Some(next) = sources[i].next()? {
                heap.push(Reverse((next, i)));
            }
        }
        if !group.is_empty() {
            f(&group)?;
        }
        Ok(())
    }
}

enum Source {
    File(BufReader<File>),
    Held(std::vec::IntoIter<Candidate>),
}

impl Source {
    fn next(&mut self) -> io::Result<Option<Candidate>> {
        match self {
            Source::Held(it) => Ok(it.next()),
            Source::File(r) => {
                let mut b = [0; BYTES];
                match r.read_exact(&mut b) {
                    Ok(()) => Ok(Some(Candidate::decode(&b))),
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// The pair of a group of candidates sharing a context: the rejected answer with the lowest
/// Logic, then the chosen answer of another model; ties by model name, then repeat, so the
/// choice does not depend on the order of the records. When no chosen and rejected answers of
/// two models are there, why not ([`NEITHER`] answers count as answers, never as a side).
pub fn choose(group: &[Candidate], models: &[String]) -> Result<(Candidate, Candidate), Unpaired> {
    let name = |c: &Candidate| models.get(usize::from(c.model)).map(String::as_str);
    let order = |c: &Candidate| (c.logic, name(c), c.repeat, c.offset, c.turn);
    let mut chosen: Vec<&Candidate> = group.iter().filter(|c| c.logic == CHOSEN).collect();
    let mut rejected: Vec<&Candidate> = group.iter().filter(|c| c.logic < CHOSEN).collect();
    chosen.sort_by_key(|c| order(c));
    rejected.sort_by_key(|c| order(c));
    let pair = rejected.iter().find_map(|r| {
        chosen
            .iter()
            .find(|c| name(c) != name(r))
            .map(|c| (**c, **r))
    });
    match pair {
        Some(pair) => Ok(pair),
        None if group
            .iter()
            .all(|c| name(c) == group.first().and_then(name)) =>
        {
            Err(Unpaired::OneModel)
        }
        None if chosen.is_empty() => Err(Unpaired::NoChosen),
        None if rejected.is_empty() => Err(Unpaired::NoRejected),
        None => Err(Unpaired::SameModel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(key: u64, model: u16, repeat: u16, logic: u16) -> Candidate {
        Candidate {
            key,
            offset: u64::from(model) * 1000 + u64::from(repeat),
            model,
            repeat,
            turn: 0,
            logic,
        }
    }

    #[test]
    fn groups_come_out_in_key_order_whether_spilled_or_not() {
        let all: Vec<Candidate> = (0..500u64)
            .map(|i| {
                cand(
                    sage_core::plan::derive_seed(i) % 97,
                    (i % 3) as u16,
                    0,
                    i as u16,
                )
            })
            .collect();
        let mut results = Vec::new();
        for chunk in [1, 7, 64, CHUNK] {
            let mut c = Candidates::new(chunk);
            for x in &all {
                c.push(*x).unwrap();
            }
            assert_eq!(c.spilled() > 0, chunk < all.len(), "chunk {chunk}");
            let mut groups: Vec<Vec<Candidate>> = Vec::new();
            c.groups(|g| {
                let mut g = g.to_vec();
                g.sort();
                groups.push(g);
                Ok::<(), io::Error>(())
            })
            .unwrap();
            let keys: Vec<u64> = groups.iter().map(|g| g[0].key).collect();
            assert!(
                keys.windows(2).all(|w| w[0] < w[1]),
                "one group per key, in order"
            );
            assert!(groups.iter().all(|g| g.iter().all(|c| c.key == g[0].key)));
            assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), all.len());
            results.push(groups);
        }
        assert!(results.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn the_pair_is_the_worst_rejected_against_another_models_chosen() {
        let models: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        // b is rejected twice; the lowest Logic is b's, and a (not b) is chosen.
        let g = [
            cand(1, 1, 0, CHOSEN),
            cand(1, 0, 0, CHOSEN),
            cand(1, 1, 1, 1000),
            cand(1, 2, 0, 3000),
        ];
        let (c, r) = choose(&g, &models).unwrap();
        assert_eq!((c.model, r.model, r.logic), (0, 1, 1000));
        // The same in any order, and an answer that is neither changes nothing.
        let mut rev = g.to_vec();
        rev.reverse();
        rev.push(cand(1, 2, 1, NEITHER));
        assert_eq!(choose(&rev, &models), Ok((c, r)));
        // Chosen only by the model of the worst rejected: the next rejected pairs.
        let g = [cand(1, 0, 0, CHOSEN), cand(1, 0, 1, 0), cand(1, 2, 0, 10)];
        let (c, r) = choose(&g, &models).unwrap();
        assert_eq!((c.model, r.model), (0, 2));
        // No pair, and why: one model answered there (its repeats chosen and rejected) ...
        let one = [cand(1, 0, 0, CHOSEN), cand(1, 0, 1, 0)];
        assert_eq!(choose(&one, &models), Err(Unpaired::OneModel));
        // ... no answer of Logic 100 ...
        let none = [cand(1, 0, 0, 0), cand(1, 1, 0, 5), cand(1, 2, 0, NEITHER)];
        assert_eq!(choose(&none, &models), Err(Unpaired::NoChosen));
        // (answers that are neither only: no answer of Logic 100 is what is missing first) ...
        let neither = [cand(1, 0, 0, NEITHER), cand(1, 1, 0, NEITHER)];
        assert_eq!(choose(&neither, &models), Err(Unpaired::NoChosen));
        // ... none below the threshold ...
        let high = [cand(1, 0, 0, CHOSEN), cand(1, 1, 0, NEITHER)];
        assert_eq!(choose(&high, &models), Err(Unpaired::NoRejected));
        // ... or both sides one model's, the other model's answer neither.
        let same = [
            cand(1, 0, 0, CHOSEN),
            cand(1, 0, 1, 0),
            cand(1, 1, 0, NEITHER),
        ];
        assert_eq!(choose(&same, &models), Err(Unpaired::SameModel));
    }

    #[test]
    fn candidates_round_trip_their_bytes() {
        let c = Candidate {
            key: u64::MAX - 3,
            offset: 1 << 40,
            model: 999,
            repeat: 99,
            turn: 65535,
            logic: CHOSEN,
        };
        assert_eq!(Candidate::decode(&c.encode()), c);
    }
}

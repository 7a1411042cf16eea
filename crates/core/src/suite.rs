//! The suite as one mechanism: what a benchmark suite gives the engine. A suite plans jobs from
//! a configuration and what it plays over (its *world*: scenarios, a store, tasks), a played
//! job leaves one record, and records fold into the suite's scores one by one. The run's
//! lifecycle above it (`sage_actors::suite`: play embedded, store, resume) and the CLI are
//! written once over this trait; a suite is one implementation of it, in a folder of its own
//! per crate (`tau2/` here, `sage_actors::tau2`, ...).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A benchmark suite: its configuration, its jobs, its records and its scoring fold.
pub trait Suite: Send + Sync + 'static {
    /// The suite's name: `sage run --suite NAME`, and the `suite` of its run manifests.
    const NAME: &'static str;
    /// The records file of a run folder (one JSON record a line).
    const RECORDS: &'static str;
    /// The scores file of a run folder ([`Suite::summary`]'s JSON).
    const SUMMARY: &'static str = "summary.json";
    /// The scores' table file of a run folder ([`Suite::summary`]'s text).
    const TABLE: &'static str = "leaderboard.md";
    /// A run's configuration: a YAML file, or the default for a run with no file.
    type Config: Clone + Default + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What the jobs play over, built once per run.
    type World: Send + Sync + 'static;
    /// One conversation to play.
    type Job: Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// One played conversation.
    type Record: Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The scores, folded a record at a time (a run's cost grows with the records in flight,
    /// never with the records done).
    type Fold: Default + Send + 'static;
    /// The scores as [`Suite::SUMMARY`] holds them (serialized in its fields' order).
    type Summary: Serialize;

    /// Reads and checks a configuration; `file` labels errors.
    fn config(text: &str, file: &str) -> Result<Self::Config, crate::plan::config::ConfigError>;
    /// Checks a configuration built in code or changed by flags; `file` labels errors.
    fn check(config: &Self::Config, file: &str) -> Result<(), crate::plan::config::ConfigError>;
    /// Every model a run calls (agents under test, customers, judges).
    fn model_names(config: &Self::Config) -> Vec<&str>;
    /// The model endpoints the configuration declares.
    fn models(config: &Self::Config) -> &[crate::plan::model::ModelConfig];
    /// Conversations in flight.
    fn concurrency(config: &Self::Config) -> usize;
    /// The run seed.
    fn seed(config: &Self::Config) -> u64;
    /// Where results/<run-id>/ goes.
    fn output_dir(config: &Self::Config) -> &std::path::Path;
    /// Applies the command line's flags to a configuration (checked afterwards).
    fn apply(config: &mut Self::Config, flags: &Flags);
    /// The agents under test, in the configuration's order (the run's lanes).
    fn agents(config: &Self::Config) -> &[String];
    /// The customer (user) simulators.
    fn customers(config: &Self::Config) -> &[String];
    /// The judges.
    fn judges(config: &Self::Config) -> &[String];
    /// The run's jobs, in the order it plays them.
    fn jobs(config: &Self::Config, run_id: &str, world: &Self::World) -> Vec<Self::Job>;
    /// A job's id, unique in its run.
    fn job_id(job: &Self::Job) -> &str;
    /// The run a job is of.
    fn job_run(job: &Self::Job) -> &str;
    /// The agent under test of a job.
    fn job_agent(job: &Self::Job) -> &str;
    /// The job a record played.
    fn record_job(record: &Self::Record) -> &Self::Job;
    /// A record's turns, and whether an infrastructure error touched it (what a run's status
    /// counts).
    fn tally(record: &Self::Record) -> (usize, bool);
    /// Folds one record into the scores.
    fn fold(fold: &mut Self::Fold, record: &Self::Record);
    /// What a run of `jobs` over `world` will do, counted before it spends (`sage run --plan`):
    /// a text for people, whose first line says the run in one line, and a JSON document.
    fn plan(
        config: &Self::Config,
        world: &Self::World,
        jobs: &[Self::Job],
    ) -> (String, serde_json::Value);
    /// The scores of the folded records: what [`Suite::SUMMARY`] holds, and the table printed
    /// and written as [`Suite::TABLE`].
    fn summary(fold: &Self::Fold) -> (Self::Summary, String);
    /// Per (agent, case): trials graded and trials passed, for a suite whose records pass or
    /// fail a case (what `sage report A --compare B` pairs); `None` for a suite scored
    /// otherwise.
    fn cases(
        _fold: &Self::Fold,
    ) -> Option<std::collections::BTreeMap<(String, String), (u32, u32)>> {
        None
    }
    /// What a person should know of the folded records besides the scores (conversations
    /// stopped by an infrastructure error, answers cut off...), a line each; none by default.
    fn warnings(_fold: &Self::Fold) -> Vec<String> {
        Vec::new()
    }
    /// One record as text for a person (`sage show DIR ID`), control characters left in (the
    /// caller makes it safe for its terminal).
    fn transcript(record: &Self::Record) -> String;
}

/// The flags of `sage run` every suite takes; `None` leaves the configuration's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    /// Runs (trials) of each case.
    pub repeats: Option<u32>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Most turns a conversation.
    pub max_turns: Option<u32>,
    /// Conversations in flight.
    pub concurrency: Option<usize>,
    /// Where results/<run-id>/ goes.
    pub output_dir: Option<std::path::PathBuf>,
}

impl Flags {
    /// Sets the values the flags give in a configuration's fields (the others left as they
    /// are): repeats, seed, most turns, concurrency and output folder.
    pub fn set(
        &self,
        repeats: &mut u32,
        seed: &mut u64,
        max_turns: &mut u32,
        concurrency: &mut usize,
        output_dir: &mut std::path::PathBuf,
    ) {
        *repeats = self.repeats.unwrap_or(*repeats);
        *seed = self.seed.unwrap_or(*seed);
        *max_turns = self.max_turns.unwrap_or(*max_turns);
        *concurrency = self.concurrency.unwrap_or(*concurrency);
        if let Some(dir) = &self.output_dir {
            output_dir.clone_from(dir);
        }
    }
}

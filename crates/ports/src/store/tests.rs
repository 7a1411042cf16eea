use super::*;

#[test]
fn times_are_written_as_rfc_3339_and_as_an_id_part() {
    // Instants whose dates are known independently (leap days, a century that is not a
    // leap year, the end of a year).
    let cases = [
        (0, "1970-01-01T00:00:00Z", "19700101-000000"),
        (951_782_400, "2000-02-29T00:00:00Z", "20000229-000000"),
        (1_709_251_199, "2024-02-29T23:59:59Z", "20240229-235959"),
        (1_798_761_599, "2026-12-31T23:59:59Z", "20261231-235959"),
        (4_107_542_400, "2100-03-01T00:00:00Z", "21000301-000000"),
    ];
    for (secs, rfc3339, compact) in cases {
        assert_eq!(utc_at(secs), (rfc3339.to_string(), compact.to_string()));
    }
    let (now, id) = now_utc();
    assert!(now.ends_with('Z') && now.len() == 20, "{now}");
    assert_eq!(id.len(), 15, "{id}");
}

#[test]
fn new_run_ids_are_valid_and_never_repeat() {
    let ids: std::collections::BTreeSet<String> =
        (0..100_000).map(|_| new_run_id(None, 42)).collect();
    assert_eq!(ids.len(), 100_000, "ids made in the same second differ");
    for id in ids.iter().take(3).chain([&new_run_id(Some("desk"), 7)]) {
        sage_core::protocol::id::check_run_id(id).expect("a valid run id");
    }
    assert!(new_run_id(Some("desk"), 7).contains("-desk-s7-"));
}

#[test]
fn a_folder_is_claimed_by_one_writer_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    // A second claim, even in this process, is refused while the first is held.
    let again = RunDir::open(&run.dir.join("..").join("r1"));
    assert!(again.is_err(), "no manifest yet");
    let err = RunDir {
        dir: run.dir.clone(),
        lock: None,
    }
    .claim()
    .unwrap_err();
    assert!(matches!(err, StoreError::InUse { .. }), "{err}");
    let writer = run.writer().expect("the holder writes");
    drop(run);
    // The writer keeps the claim.
    assert!(FolderLock::acquire(tmp.path().join("r1").as_path()).is_err());
    drop(writer);
    assert!(FolderLock::acquire(tmp.path().join("r1").as_path()).is_ok());
    assert!(
        !tmp.path().join("r1/.lock").exists(),
        "let go, a claim removes its file"
    );
    // A folder with records is refused as a new run.
    std::fs::write(tmp.path().join("r1/dialogues.jsonl"), "").unwrap();
    assert!(RunDir::create(tmp.path(), "r1").is_err());
    for bad in ["../x", "", "a/b", "/abs", ".."] {
        assert!(RunDir::create(tmp.path(), bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_lock_taken_on_a_removed_lock_file_claims_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(FolderLock::FILE);
    let first = FolderLock::acquire(tmp.path()).unwrap();
    // Another process opened the lock file just before the holder let go.
    let late = File::open(&path).unwrap();
    assert!(is_file_at(&late, &path).unwrap());
    drop(first);
    assert!(!path.exists());
    // Its lock now succeeds, on a file no longer in the folder: no claim ...
    late.try_lock().unwrap();
    assert!(!is_file_at(&late, &path).unwrap());
    // ... so a claim made now holds the folder's new lock file alone.
    let second = FolderLock::acquire(tmp.path()).unwrap();
    assert!(is_file_at(&second.file, &path).unwrap());
    assert!(matches!(
        FolderLock::acquire(tmp.path()),
        Err(StoreError::InUse { .. })
    ));
    drop(second);
    assert!(!path.exists());
}

#[test]
fn a_cut_last_line_is_taken_back_when_a_writer_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = RunDir::create(dir.path(), "cut").expect("run dir");
    let path = run.path().join("dialogues.jsonl");
    let long = "x".repeat(150 * 1024);
    // (file content, its length once a writer opened it): a last line cut off more than
    // one 64 KiB chunk from the end; no line break at all; whole lines only.
    for (text, kept) in [
        (format!("{{}}\n{long}"), 3),
        (long.clone(), 0),
        (format!("{{}}\n{long}\n"), 3 + long.len() as u64 + 1),
        (String::new(), 0),
    ] {
        std::fs::write(&path, &text).expect("write");
        let mut writer = run.jsonl_writer("dialogues.jsonl").expect("writer");
        assert_eq!(std::fs::metadata(&path).expect("len").len(), kept);
        assert_eq!(writer.append_json(b"{\"a\":1}").expect("append"), kept);
        drop(writer);
    }
}

#[test]
fn the_simulator_version_is_bumped_whenever_its_prompt_changes() {
    // The customer simulator's version and the hash of its prompt template, pinned together:
    // a change to what the customer model is told fails here until SIMULATOR_VERSION is
    // bumped (sage_core::prompts::user) and both are pinned again, so that a result's
    // `simulator.version` says which simulator played.
    const PINNED: (u32, &str) = (
        1,
        "86f353d85a39bf722301533ed676dd5c57a3b4db09f1fde210ed1695c6172653",
    );
    assert_eq!(
        (
            sage_core::prompts::user::SIMULATOR_VERSION,
            simulator_prompt_sha256()
        ),
        PINNED,
        "the customer simulator's prompt changed: bump SIMULATOR_VERSION and pin its new hash"
    );
    let manifest = Manifest::new("r", &RunConfig::default(), &[], 0);
    let simulator = manifest.simulator.expect("the default run's customer");
    assert_eq!(simulator.prompt_sha256, simulator_prompt_sha256());
}

//! Replays the fuzzers' saved corpora (fuzz/corpus/<target>/) through the
//! same functions the fuzz targets call, with no fuzz engine: an input that
//! once crashed, or that reached new code, is checked on every `cargo test`.

use std::time::Instant;

#[path = "../fuzz/src/lib.rs"]
mod targets;

#[test]
fn every_saved_fuzz_input_runs_through_its_target() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let started = Instant::now();
    for (name, run) in targets::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no saved inputs in {}", dir.display());
        for f in &files {
            let data = std::fs::read(f).unwrap();
            // A panic names the input that caused it.
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{name}: {} panicked", f.display());
        }
        eprintln!("{name}: {} inputs", files.len());
    }
    eprintln!("corpora replayed in {:?}", started.elapsed());
}

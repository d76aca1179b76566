//! Docs that run (issue 36, §3): every ```console block of README.md and
//! docs/*.md, and the cases under tests/docs/, is run with the real binary
//! from the repository root, and its exit code and shown output checked
//! (`...` stands for lines left out, `[..]` for part of a line). A renamed
//! flag or metric, or a changed output, fails here. Blocks marked ```sh are
//! not run (they need a server, the network, or write files).

#[test]
fn console_examples_in_the_docs_run_as_shown() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cases = trycmd::TestCases::new();
    cases
        .register_bin(
            "toolscore",
            std::path::Path::new(env!("CARGO_BIN_EXE_toolscore")),
        )
        // No progress bar or colour from the environment the tests run in.
        .env("NO_COLOR", "1")
        // The examples save no run: the store is docs/history.md's, and a
        // test must not leave `.toolscore/` in the checkout.
        .env("TOOLSCORE_STORE", "off")
        .timeout(std::time::Duration::from_secs(120));
    cases.case(format!("{root}/README.md"));
    cases.case(format!("{root}/docs/*.md"));
    cases.case(format!("{root}/tests/docs/*.md"));
}

//! Compiles the results API (`proto/toolscore/results/v1/results.proto`) with
//! protox, a pure-Rust protobuf compiler, so no system `protoc` is needed.
//! The OTLP types themselves come pre-generated from `opentelemetry-proto`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(["toolscore/results/v1/results.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

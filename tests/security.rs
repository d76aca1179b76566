//! TLS, mutual TLS and bearer-token auth of `toolscore serve`, on the real
//! binary and real sockets: certificates are made in the test (rcgen),
//! exports go over HTTPS (reqwest) and gRPC over TLS (tonic), and the
//! results are read back from the JSONL output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::Value;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

use crate::util::{hex, poll_until, toolscore, ChildGuard, TempDir};

const TOKEN: &str = "tok-3f9a1c";

// ------------------------------------------------------------ certificates

/// A server certificate for 127.0.0.1 and localhost, and a client CA with
/// one client certificate, as PEM files in a temp directory.
struct Certs {
    dir: TempDir,
    server_pem: String,
    client_pem: String,
    client_key_pem: String,
}

impl Certs {
    fn new(tag: &str) -> Certs {
        let dir = TempDir::new(tag);
        let server =
            rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                .unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
                .unwrap();
        let client_key = rcgen::KeyPair::generate().unwrap();
        let mut client_params = rcgen::CertificateParams::new(vec!["agent".into()]).unwrap();
        client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let client = client_params.signed_by(&client_key, &ca).unwrap();
        let certs = Certs {
            server_pem: server.cert.pem(),
            client_pem: client.pem(),
            client_key_pem: client_key.serialize_pem(),
            dir,
        };
        std::fs::write(certs.path("server.pem"), &certs.server_pem).unwrap();
        std::fs::write(certs.path("server.key"), server.signing_key.serialize_pem()).unwrap();
        std::fs::write(certs.path("ca.pem"), ca.pem()).unwrap();
        std::fs::write(certs.path("token"), format!("{TOKEN}\n")).unwrap();
        certs
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn tls_args(&self) -> Vec<String> {
        vec![
            "--tls-cert-file".into(),
            self.arg("server.pem"),
            "--tls-key-file".into(),
            self.arg("server.key"),
        ]
    }

    /// A blocking HTTPS client that trusts only the test's server
    /// certificate (and, with `client_cert`, presents the client one).
    fn https_client(&self, client_cert: bool) -> reqwest::blocking::Client {
        let root = reqwest::Certificate::from_pem(self.server_pem.as_bytes()).unwrap();
        let mut b = reqwest::blocking::Client::builder()
            .tls_certs_only([root])
            .timeout(Duration::from_secs(15));
        if client_cert {
            let pem = format!("{}{}", self.client_pem, self.client_key_pem);
            b = b.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
        }
        b.build().unwrap()
    }
}

// ------------------------------------------------------------ the server

/// `toolscore serve` as a child process; its ports come from `Listening.`.
struct Srv {
    child: ChildGuard,
    grpc: SocketAddr,
    http: SocketAddr,
    admin: SocketAddr,
    out: PathBuf,
    log: std::thread::JoinHandle<String>,
    _dir: TempDir,
}

impl Srv {
    fn start(admin: &str, args: &[String]) -> Srv {
        let dir = TempDir::new("sec-srv");
        let out = dir.path().join("results.jsonl");
        let mut child = ChildGuard(
            crate::util::bin()
                .args(["serve", "--grpc-endpoint", "127.0.0.1:0"])
                .args(["--http-endpoint", "127.0.0.1:0", "--admin-endpoint", admin])
                .args(["--decision-wait", "200ms", "--quiet"])
                .args(args)
                .arg("--output")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start toolscore serve"),
        );
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Listening.") {
                    let _ = tx.send(line.clone());
                }
                log.push_str(&line);
                log.push('\n');
            }
            log
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("serve logs `Listening.`");
        let addr = |key: &str| -> SocketAddr {
            let a: SocketAddr = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_else(|| panic!("{key} in {line}"))
                .parse()
                .unwrap();
            // An unspecified address (0.0.0.0) is reached through loopback.
            SocketAddr::new([127, 0, 0, 1].into(), a.port())
        };
        Srv {
            grpc: addr("grpc="),
            http: addr("http="),
            admin: addr("admin="),
            child,
            out,
            log,
            _dir: dir,
        }
    }

    /// SIGTERM, then the exit status, the log and the result rows.
    fn stop(mut self) -> (ExitStatus, String, Vec<Value>) {
        let status = self.child.terminate(Duration::from_secs(30));
        let log = self.log.join().unwrap();
        let rows = std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSONL row"))
            .collect();
        (status, log, rows)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The trace ids of the `unmatched_trace` rows (traces scored with no case).
fn scored(rows: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = rows
        .iter()
        .filter(|r| r["type"] == "unmatched_trace")
        .map(|r| r["trace_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

// ------------------------------------------------------------ payloads

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn trace_id(t: u8) -> Vec<u8> {
    let mut id = vec![0x5e; 16];
    id[15] = t;
    id
}

/// An `invoke_agent` root with one `execute_tool` child.
fn agent_run(t: u8) -> ExportTraceServiceRequest {
    let root = vec![t, 0, 0, 0, 0, 0, 0, 1];
    let spans = vec![
        Span {
            trace_id: trace_id(t),
            span_id: vec![t, 0, 0, 0, 0, 0, 0, 2],
            parent_span_id: root.clone(),
            name: "execute_tool get_weather".into(),
            kind: 1,
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 1_005,
            attributes: vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", "get_weather"),
                kv("gen_ai.tool.call.arguments", r#"{"city":"Paris"}"#),
            ],
            ..Default::default()
        },
        Span {
            trace_id: trace_id(t),
            span_id: root,
            name: "invoke_agent planner".into(),
            kind: 1,
            start_time_unix_nano: 900,
            end_time_unix_nano: 2_000,
            attributes: vec![kv("gen_ai.operation.name", "invoke_agent")],
            ..Default::default()
        },
    ];
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Default::default()),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// POSTs an OTLP/protobuf export over HTTPS; the status and body.
fn https_export(
    client: &reqwest::blocking::Client,
    addr: SocketAddr,
    t: u8,
    token: Option<&str>,
) -> reqwest::Result<(u16, Vec<u8>)> {
    let mut req = client
        .post(format!("https://{addr}/v1/traces"))
        .header("Content-Type", "application/x-protobuf")
        .body(agent_run(t).encode_to_vec());
    if let Some(tok) = token {
        req = req.bearer_auth(tok);
    }
    let resp = req.send()?;
    Ok((resp.status().as_u16(), resp.bytes()?.to_vec()))
}

/// One export over gRPC (`https://` with TLS); the status code.
fn grpc_export(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    tls: Option<ClientTlsConfig>,
    t: u8,
    token: Option<&str>,
) -> Result<(), tonic::Status> {
    rt.block_on(async {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut endpoint = Channel::from_shared(format!("{scheme}://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(15));
        if let Some(tls) = tls {
            endpoint = endpoint.tls_config(tls).unwrap();
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| tonic::Status::unavailable(format!("connect: {e:?}")))?;
        let mut req = tonic::Request::new(agent_run(t));
        if let Some(tok) = token {
            req.metadata_mut()
                .insert("authorization", format!("Bearer {tok}").parse().unwrap());
        }
        TraceServiceClient::new(channel)
            .export(req)
            .await
            .map(|_| ())
    })
}

/// A plain-HTTP request on its own connection; the raw reply (empty when
/// the server closed without answering).
fn plain_http(addr: SocketAddr, request: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(request.as_bytes());
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    raw
}

fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let raw = plain_http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"),
    );
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP reply: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// The value of an unlabelled sample in a Prometheus exposition.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

// ------------------------------------------------------------ tests

/// With a certificate and key every port takes TLS only: an export over
/// HTTPS and one over gRPC with TLS are scored; plain HTTP and plain gRPC
/// to the same ports get nothing in, and are counted as failed handshakes.
#[test]
fn tls_exports_over_https_and_grpc_are_scored_and_plaintext_is_refused() {
    let certs = Certs::new("tls");
    let srv = Srv::start("127.0.0.1:0", &certs.tls_args());
    let client = certs.https_client(false);
    let (status, body) = https_export(&client, srv.http, 1, None).expect("HTTPS export");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));

    let rt = runtime();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&certs.server_pem))
        .domain_name("localhost");
    grpc_export(&rt, srv.grpc, Some(tls), 2, None).expect("gRPC export over TLS");

    // Plain HTTP to the TLS port: no HTTP answer, nothing accepted.
    let raw = plain_http(
        srv.http,
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(!raw.starts_with(b"HTTP/"), "{raw:?}");
    // Plain gRPC to the TLS port fails.
    let e = grpc_export(&rt, srv.grpc, None, 3, None).unwrap_err();
    assert_ne!(e.code(), tonic::Code::Ok);
    // The admin port takes HTTPS too; the refused handshakes are counted.
    let admin = |path: &str| {
        let r = client
            .get(format!("https://{}{path}", srv.admin))
            .send()
            .expect("HTTPS to admin");
        (r.status().as_u16(), r.text().unwrap())
    };
    assert_eq!(admin("/healthz").0, 200);
    let failures = || {
        metric(
            &admin("/metrics").1,
            "toolscore_tls_handshake_failures_total",
        )
    };
    poll_until(
        "the handshake failures to be counted",
        Duration::from_secs(15),
        || failures() >= 2.0,
    );

    let (status, log, rows) = srv.stop();
    assert!(status.success(), "{log}");
    assert_eq!(
        scored(&rows),
        vec![hex(&trace_id(1)), hex(&trace_id(2))],
        "{log}"
    );
    assert!(
        !log.contains("SECURITY"),
        "loopback ports: no warning\n{log}"
    );
}

/// With a client CA the OTLP receivers require a client certificate signed
/// by it; the admin port does not (probes have none).
#[test]
fn mutual_tls_requires_a_client_certificate_on_the_receivers() {
    let certs = Certs::new("mtls");
    let mut args = certs.tls_args();
    args.extend(["--tls-client-ca-file".into(), certs.arg("ca.pem")]);
    let srv = Srv::start("127.0.0.1:0", &args);
    assert!(
        https_export(&certs.https_client(false), srv.http, 1, None).is_err(),
        "no client certificate: the handshake fails"
    );
    let (status, _) =
        https_export(&certs.https_client(true), srv.http, 2, None).expect("with a client cert");
    assert_eq!(status, 200);

    let rt = runtime();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&certs.server_pem))
        .domain_name("localhost");
    let without = grpc_export(&rt, srv.grpc, Some(tls.clone()), 3, None);
    assert!(without.is_err(), "gRPC without a client certificate");
    let with = tls.identity(Identity::from_pem(&certs.client_pem, &certs.client_key_pem));
    grpc_export(&rt, srv.grpc, Some(with), 4, None).expect("gRPC with a client certificate");

    let r = certs
        .https_client(false)
        .get(format!("https://{}/healthz", srv.admin))
        .send()
        .expect("admin without a client certificate");
    assert_eq!(r.status().as_u16(), 200);

    let (status, log, rows) = srv.stop();
    assert!(status.success(), "{log}");
    assert_eq!(
        scored(&rows),
        vec![hex(&trace_id(2)), hex(&trace_id(4))],
        "{log}"
    );
}

/// With `--auth-token-file` exports (HTTP and gRPC), the results API and
/// `/metrics` need `Authorization: Bearer <token>`: without it or with a
/// wrong one the answer is 401 / UNAUTHENTICATED and nothing is taken;
/// `/healthz` and `/readyz` stay open.
#[test]
fn bearer_token_is_required_except_for_probes() {
    let certs = Certs::new("auth");
    let srv = Srv::start(
        "127.0.0.1:0",
        &["--auth-token-file".into(), certs.arg("token")],
    );
    let post = |t: u8, auth: &str| {
        let body = agent_run(t).encode_to_vec();
        let raw = plain_http(
            srv.http,
            &format!(
                "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ),
        );
        // The body is not sent: a refused request must be answered from
        // its head alone.
        String::from_utf8_lossy(&raw).into_owned()
    };
    let missing = post(1, "");
    assert!(missing.starts_with("HTTP/1.1 401"), "{missing}");
    assert!(
        missing
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{missing}"
    );
    assert!(missing.contains("missing bearer token"), "{missing}");
    let wrong = post(2, "Authorization: Bearer nope\r\n");
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    assert!(wrong.contains("wrong bearer token"), "{wrong}");

    let mut s = TcpStream::connect(srv.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let body = agent_run(3).encode_to_vec();
    write!(
        s,
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    assert!(
        raw.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&raw)
    );

    let rt = runtime();
    let e = grpc_export(&rt, srv.grpc, None, 4, None).unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    let e = grpc_export(&rt, srv.grpc, None, 5, Some("nope")).unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    grpc_export(&rt, srv.grpc, None, 6, Some(TOKEN)).expect("gRPC with the token");

    // The results API streams tool arguments: it needs the token too.
    use toolscore::serve::results_api::pb::results_service_client::ResultsServiceClient;
    use toolscore::serve::results_api::pb::SubscribeRequest;
    let url = format!("http://{}", srv.grpc);
    let e = rt
        .block_on(async {
            let mut client = ResultsServiceClient::connect(url).await.expect("connect");
            client.subscribe(SubscribeRequest::default()).await
        })
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");

    assert_eq!(get(srv.admin, "/healthz", None).0, 200);
    assert_eq!(get(srv.admin, "/readyz", None).0, 200);
    assert_eq!(get(srv.admin, "/metrics", None).0, 401);
    assert_eq!(get(srv.admin, "/metrics", Some("nope")).0, 401);
    let (status, text) = get(srv.admin, "/metrics", Some(TOKEN));
    assert_eq!(status, 200);
    // Two HTTP, two gRPC, one results API, two /metrics.
    assert_eq!(
        metric(&text, "toolscore_requests_unauthenticated_total"),
        7.0
    );

    let (status, log, rows) = srv.stop();
    assert!(status.success(), "{log}");
    assert_eq!(
        scored(&rows),
        vec![hex(&trace_id(3)), hex(&trace_id(6))],
        "{log}"
    );
    assert!(
        log.contains("Refusing requests without the right bearer token"),
        "{log}"
    );
    assert_eq!(
        log.matches("Refusing requests without the right bearer token")
            .count(),
        1,
        "logged once, not per request\n{log}"
    );
}

/// An admin port beyond loopback with no token gets a loud warning; with a
/// token, none.
#[test]
fn exposed_admin_without_token_is_warned() {
    let srv = Srv::start("0.0.0.0:0", &[]);
    assert_eq!(get(srv.admin, "/healthz", None).0, 200);
    let (status, log, _) = srv.stop();
    assert!(status.success(), "{log}");
    let warning = log
        .lines()
        .find(|l| l.contains("SECURITY") && l.contains("admin endpoint"))
        .unwrap_or_else(|| panic!("no warning\n{log}"));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains("tool arguments"), "{warning}");

    let certs = Certs::new("warn");
    let srv = Srv::start(
        "0.0.0.0:0",
        &["--auth-token-file".into(), certs.arg("token")],
    );
    let (status, log, _) = srv.stop();
    assert!(status.success(), "{log}");
    assert!(!log.contains("SECURITY"), "{log}");
}

/// Bad TLS or token files stop the start with exit 2 and a message naming
/// the file.
#[test]
fn bad_tls_and_token_files_are_refused_at_start() {
    let certs = Certs::new("bad");
    let other = rcgen::generate_simple_self_signed(vec!["other".into()]).unwrap();
    std::fs::write(certs.path("other.key"), other.signing_key.serialize_pem()).unwrap();
    std::fs::write(certs.path("empty"), "\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "serve",
            "--grpc-endpoint",
            "127.0.0.1:0",
            "--http-endpoint",
            "127.0.0.1:0",
            "--admin-endpoint",
            "off",
        ];
        args.extend_from_slice(extra);
        let out = toolscore(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (cert, key, ca) = (
        certs.arg("server.pem"),
        certs.arg("server.key"),
        certs.arg("ca.pem"),
    );
    let missing = certs.arg("missing.pem");
    let (other_key, empty) = (certs.arg("other.key"), certs.arg("empty"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--tls-cert-file", &missing, "--tls-key-file", &key],
            "missing.pem",
        ),
        (
            vec!["--tls-cert-file", &key, "--tls-key-file", &key],
            "no certificate",
        ),
        (
            vec!["--tls-cert-file", &cert, "--tls-key-file", &cert],
            "no private key",
        ),
        (
            vec!["--tls-cert-file", &cert, "--tls-key-file", &other_key],
            "are not a certificate and its key",
        ),
        (vec!["--tls-cert-file", &cert], "needs --tls-key-file"),
        (vec!["--tls-client-ca-file", &ca], "needs --tls-cert-file"),
        (
            vec![
                "--tls-cert-file",
                &cert,
                "--tls-key-file",
                &key,
                "--tls-client-ca-file",
                &key,
            ],
            "no certificate",
        ),
        (vec!["--auth-token-file", &missing], "missing.pem"),
        (vec!["--auth-token-file", &empty], "empty"),
    ];
    for (args, want) in cases {
        let (code, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: want `{want}` in {stderr}");
    }
}

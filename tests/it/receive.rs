//! `flota recibir` from outside: the bad-input matrix (snapshot), loopback by default, a full
//! queue answered 503, nothing acknowledged lost to SIGKILL, SIGTERM committing what was
//! accepted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver as Lines, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::ground_truth::fixture;
use crate::ingest::emptied_copy;
use crate::support::{TIMEOUT, flota_bin};

/// A running `flota recibir` on a free loopback port, its stderr collected.
pub struct Receiver {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    pub fn start(db: impl AsRef<std::ffi::OsStr>, extra: &[&str]) -> Receiver {
        let mut child = Command::new(flota_bin())
            .arg("recibir")
            .arg("--db")
            .arg(db)
            .args(["--escuchar", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sender, lines): (_, Lines<String>) = channel();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = sender.send(line);
            }
        });
        let deadline = Instant::now() + TIMEOUT;
        let addr = loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no 'escuchando en' line: {:?}", log.lock().unwrap()));
            if let Some(rest) = line.split("escuchando en http://").nth(1) {
                break rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        };
        Receiver { child, addr, log }
    }

    /// Sends raw bytes and returns the status code and body, or `None` when the connection
    /// was closed without an answer.
    pub fn raw(&self, request: &[u8]) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let _ = stream.write_all(request);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or("")
            .trim()
            .to_owned();
        Some((status, body))
    }

    /// A GET with `query`, connection closed after the answer.
    pub fn get(&self, query: &str) -> Option<(u16, String)> {
        self.raw(
            format!("GET /?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }

    pub fn wait(mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "flota recibir did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A receiver's database: the `minimo` fleet without positions or detections.
pub fn empty_fleet(dir: &Path) -> PathBuf {
    let db = dir.join("recibida.db");
    emptied_copy(&fixture("minimo").db, &db);
    db
}

fn rows(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM posiciones", [], |r| r.get(0))
        .unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn post_json(body: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn post_form(body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

fn get(query: &str) -> Vec<u8> {
    format!("GET /?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").into_bytes()
}

/// Every case: a name and the bytes sent on a fresh connection.
fn cases(t: i64) -> Vec<(&'static str, Vec<u8>)> {
    let good = |id: &str| format!("id={id}&timestamp={t}&lat=14.6&lon=-90.5&speed=10&bearing=90");
    let big = "a".repeat(70 * 1024);
    vec![
        ("consulta_valida", get(&good("P-123BCD"))),
        ("placa_con_otra_escritura", get(&good("p%20456%20def"))),
        ("repetida", get(&good("P-123BCD"))),
        ("sin_id", get(&format!("timestamp={t}&lat=14.6&lon=-90.5"))),
        ("id_desconocido", get(&good("P-999ZZZ"))),
        ("sin_coordenadas", get(&format!("id=P-123BCD&timestamp={t}"))),
        ("latitud_fuera_de_rango", get(&format!("id=P-123BCD&timestamp={t}&lat=95&lon=-90.5"))),
        ("longitud_no_numerica", get(&format!("id=P-123BCD&timestamp={t}&lat=14.6&lon=oeste"))),
        ("velocidad_no_numerica", get(&format!("id=P-123BCD&timestamp={t}&lat=14.6&lon=-90.5&speed=NaN"))),
        ("hora_ilegible", get("id=P-123BCD&timestamp=manana&lat=14.6&lon=-90.5")),
        ("hora_futura", get(&format!("id=P-123BCD&timestamp={}&lat=14.6&lon=-90.5", t + 3 * 86_400 + 120))),
        ("antes_de_2000", get("id=P-123BCD&timestamp=86400&lat=14.6&lon=-90.5")),
        // What real trackers send: a clock 90 s ahead of the receiver's (t is a minute ago),
        // local time sent as UTC (six hours ahead; the half minute over keeps the figure whole
        // whatever the request takes), no fix sent as 0, 0, a day-old backlog.
        ("reloj_90_s_adelantado", get(&format!("id=P-456DEF&timestamp={}&lat=14.6&lon=-90.5", t + 150))),
        ("hora_local_como_utc", get(&format!("id=P-456DEF&timestamp={}&lat=14.6&lon=-90.5", t + 90 + 6 * 3600))),
        ("posicion_cero", get(&format!("id=P-456DEF&timestamp={}&lat=0&lon=0", t - 10))),
        ("json_posicion_cero", post_json(&format!(r#"{{"device_id":"P-456DEF","location":{{"timestamp":{},"coords":{{"latitude":0.0,"longitude":0.0}}}}}}"#, t - 20))),
        ("atrasada_un_dia", get(&format!("id=P-456DEF&timestamp={}&lat=14.6&lon=-90.5", t - 86_400))),
        ("sin_fix_valido", get(&format!("id=P-123BCD&timestamp={}&lat=14.6&lon=-90.5&valid=false", t - 5))),
        ("formulario_valido", post_form(format!("id=P-789GHJ&timestamp={t}&lat=14.6&lon=-90.5").as_bytes())),
        ("formulario_no_utf8", post_form(&[b'i', b'd', b'=', 0xff, 0xfe])),
        ("json_valido", post_json(&format!(r#"{{"device_id":"P-456DEF","location":{{"timestamp":{},"coords":{{"latitude":14.6,"longitude":-90.5,"speed":3,"heading":90}}}}}}"#, t + 1))),
        ("json_desconocido", post_json(r#"{"device_id":"X1","location":{"coords":{"latitude":14.6,"longitude":-90.5}}}"#)),
        ("json_cortado", post_json(r#"{"device_id":"P-123BCD","location":{"#)),
        ("json_raiz_lista", post_json("[]")),
        ("json_location_lista", post_json(r#"{"device_id":"P-123BCD","location":[]}"#)),
        ("json_sin_coords", post_json(r#"{"device_id":"P-123BCD","location":{}}"#)),
        ("json_latitud_texto", post_json(r#"{"device_id":"P-123BCD","location":{"coords":{"latitude":"14.6","longitude":-90.5}}}"#)),
        ("cuerpo_demasiado_grande", post_form(big.as_bytes())),
        ("linea_de_solicitud_rota", b"ESTO NO ES HTTP\r\n\r\n".to_vec()),
        (
            "encabezado_enorme",
            format!("GET /?{} HTTP/1.1\r\nHost: x\r\nX-Relleno: {}\r\n\r\n", good("P-123BCD"), "b".repeat(20 * 1024)).into_bytes(),
        ),
        (
            "cuerpo_lento",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nConnection: close\r\n\r\nid=P-123BCD".to_vec(),
        ),
        ("encabezados_lentos", b"GET /?id=P-123BCD HTTP/1.1\r\nHost: x\r\n".to_vec()),
    ]
}

#[test]
fn bad_input_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    let receiver = Receiver::start(&db, &["--tiempo-limite", "1"]);
    let t = now() - 60;
    let mut shown = String::new();
    let mut refused = 0;
    for (name, request) in cases(t) {
        let answer = receiver.raw(&request);
        if answer.as_ref().is_none_or(|(status, _)| *status >= 400) {
            refused += 1;
        }
        let line = match answer {
            Some((status, body)) => format!("{name}: HTTP {status} {body}"),
            None => format!("{name}: conexión cerrada sin respuesta"),
        };
        shown.push_str(&line);
        shown.push('\n');
    }
    insta::assert_snapshot!(shown);
    // Six positions stored: the valid ones, the clock 90 s ahead and the day-old one included
    // (the repeat, the one without a fix, 0, 0 and six hours ahead are not).
    assert_eq!(rows(&db), 6, "{shown}");
    // One Spanish log line per refusal (past 20 in a second, the rest counted in one line),
    // and the receiver still answers.
    let logged = |log: Vec<String>| -> usize {
        log.iter()
            .map(|l| {
                if l.contains("rechazada (") {
                    1
                } else if let Some(rest) = l.split("… y ").nth(1) {
                    rest.split(' ').next().unwrap().parse().unwrap()
                } else {
                    0
                }
            })
            .sum()
    };
    let deadline = Instant::now() + TIMEOUT;
    while logged(receiver.log()) < refused {
        assert!(Instant::now() < deadline, "{:#?}", receiver.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        receiver
            .get(&format!(
                "id=P-123BCD&timestamp={}&lat=14.6&lon=-90.5",
                t + 1
            ))
            .map(|a| a.0),
        Some(200)
    );
    receiver.signal(rustix::process::Signal::TERM);
    assert!(receiver.wait().success());
}

#[test]
fn only_loopback_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(flota_bin())
        .args(["recibir", "--escuchar", "0.0.0.0:0", "--db"])
        .arg(dir.path().join("x.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no es una dirección local") && stderr.contains("--permitir-red"),
        "{stderr}"
    );
    assert!(!dir.path().join("x.db").exists());
}

#[test]
fn a_full_queue_is_answered_503_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    let receiver = Receiver::start(&db, &["--cola", "1"]);
    // Another writer holds the file: the receiver's writer waits, its queue fills.
    let blocker = Connection::open(&db).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t = now() - 600;
    let addr = receiver.addr;
    let (answered, answers) = channel();
    for i in 0..6 {
        let answered = answered.clone();
        std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(TIMEOUT)).unwrap();
            let query = format!("id=P-123BCD&timestamp={}&lat=14.6&lon=-90.5", t + i);
            write!(
                stream,
                "GET /?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            answered.send(answer).unwrap();
        });
    }
    drop(answered);
    // The lock is held until the full queue has answered 503 (the writer holds one position
    // and the queue one, so six senders must meet it full), or until every sender has its
    // answer (then the queue refused none, and the assertion below says so). Events, not a
    // clock: a fixed pause once let a slow machine deliver too few requests before it ended.
    let full = |a: &String| a.starts_with("HTTP/1.1 503") && a.contains("cola llena");
    let mut seen = Vec::new();
    while !seen.iter().any(full) && seen.len() < 6 {
        seen.push(answers.recv_timeout(TIMEOUT).expect("a sender's answer"));
    }
    blocker.execute_batch("ROLLBACK").unwrap();
    drop(blocker);
    let answers: Vec<String> = seen.into_iter().chain(answers.iter()).collect();
    assert!(answers.iter().any(full), "{answers:#?}");
    let busy = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503"))
        .count();
    let ok = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 200"))
        .count();
    assert!(busy >= 1 && busy + ok == 6, "{answers:#?}");
    assert!(
        answers
            .iter()
            .filter(|a| a.starts_with("HTTP/1.1 503"))
            .all(|a| a.to_ascii_lowercase().contains("retry-after: 1"))
    );
    receiver.signal(rustix::process::Signal::TERM);
    assert!(receiver.wait().success());
    assert_eq!(rows(&db), ok as i64);
}

#[test]
fn sigkill_after_acknowledgements_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    let receiver = Receiver::start(&db, &[]);
    let t = now() - 3600;
    let mut acknowledged = 0;
    for i in 0..60 {
        let plate = ["P-123BCD", "P-456DEF", "P-789GHJ"][i % 3];
        let query = format!(
            "id={plate}&timestamp={}&lat=14.6&lon=-90.5&speed={}",
            t + i as i64 * 5,
            i % 40
        );
        if receiver.get(&query).map(|a| a.0) == Some(200) {
            acknowledged += 1;
        }
    }
    assert_eq!(acknowledged, 60);
    receiver.signal(rustix::process::Signal::KILL);
    assert!(!receiver.wait().success());
    assert_eq!(rows(&db), 60);
}

#[test]
fn sigterm_commits_what_was_accepted_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    let receiver = Receiver::start(&db, &[]);
    let t = now() - 3600;
    let addr = receiver.addr;
    let acknowledged_so_far = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders: Vec<_> = (0..4)
        .map(|k| {
            let acknowledged_so_far = Arc::clone(&acknowledged_so_far);
            std::thread::spawn(move || {
                let mut ok = 0;
                for i in 0..200 {
                    let Ok(mut stream) = TcpStream::connect(addr) else {
                        break;
                    };
                    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
                    let query = format!(
                        "id=P-123BCD&timestamp={}&lat=14.6&lon=-90.5",
                        t + k * 1000 + i
                    );
                    if write!(
                        stream,
                        "GET /?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    )
                    .is_err()
                    {
                        break;
                    }
                    let mut answer = String::new();
                    let _ = stream.read_to_string(&mut answer);
                    if answer.starts_with("HTTP/1.1 200") {
                        ok += 1;
                        acknowledged_so_far.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
                ok
            })
        })
        .collect();
    // The signal comes mid-stream, once some positions were acknowledged (a fixed pause once
    // let a slow machine signal before the first).
    let deadline = Instant::now() + TIMEOUT;
    while acknowledged_so_far.load(std::sync::atomic::Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "nothing acknowledged");
        std::thread::sleep(Duration::from_millis(5));
    }
    receiver.signal(rustix::process::Signal::TERM);
    let status = receiver.wait();
    let acknowledged: i64 = senders.into_iter().map(|s| s.join().unwrap()).sum();
    assert!(status.success(), "{status:?}");
    assert!(acknowledged > 0);
    assert_eq!(rows(&db), acknowledged);
    // The analysis covers what was written.
    let store = flota::store::Store::open(&db).unwrap();
    let meta = store.meta().unwrap();
    assert_eq!(
        store.analysis_state(&meta).unwrap(),
        flota::store::AnalysisState::Current
    );
}

/// An idle keep-alive connection closed by the header timeout is normal: closed without an
/// answer and without a refusal line; a connection that started a request and stalled is
/// still refused (the bad-input matrix's `encabezados_lentos`).
#[test]
fn an_idle_keep_alive_closed_by_the_timeout_is_not_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    let receiver = Receiver::start(&db, &["--tiempo-limite", "1"]);
    let t = now() - 60;
    let mut idle = TcpStream::connect(receiver.addr).unwrap();
    idle.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(
        idle,
        "GET /?id=P-123BCD&timestamp={t}&lat=14.6&lon=-90.5 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let mut answer = [0u8; 4096];
    let n = idle.read(&mut answer).unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    // Kept alive and idle past the timeout: the receiver closes it, saying nothing to it.
    let mut rest = Vec::new();
    idle.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    // A stalled request on another connection is refused and logged, after the idle one.
    let mut stalled = TcpStream::connect(receiver.addr).unwrap();
    stalled.set_read_timeout(Some(TIMEOUT)).unwrap();
    stalled
        .write_all(b"GET /?id=P-123BCD HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let _ = stalled.read_to_end(&mut rest);
    let stalled_port = format!(":{}:", stalled.local_addr().unwrap().port());
    let idle_port = format!(":{}:", idle.local_addr().unwrap().port());
    let deadline = Instant::now() + TIMEOUT;
    while !receiver.log().iter().any(|l| l.contains(&stalled_port)) {
        assert!(Instant::now() < deadline, "{:#?}", receiver.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let refusals: Vec<String> = receiver
        .log()
        .into_iter()
        .filter(|l| l.contains("rechazada ("))
        .collect();
    assert!(
        !refusals.iter().any(|l| l.contains(&idle_port)),
        "{refusals:#?}"
    );
    assert_eq!(refusals.len(), 1, "{refusals:#?}");
    assert!(refusals[0].contains("encabezados"), "{refusals:#?}");
}

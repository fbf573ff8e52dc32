//! `flota cliente` on a real terminal: a pseudo-terminal drives the line editor as a person
//! would (prompts, Enter, Ctrl-C, Ctrl-D), and everything the terminal received is checked.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

use crate::ground_truth::fixture;
use crate::support::flota_bin;

/// Bound on each wait for output: a stuck session fails instead of hanging the suite.
const PATIENCE_MS: u64 = 60_000;

/// A client on a pseudo-terminal, and everything it wrote so far.
struct Terminal {
    session: PtySession,
    transcript: String,
}

/// rexpect hands over the terminal's bytes one `char` each (Latin-1, in effect): the UTF-8
/// text a needle must be written as, and back.
fn as_bytes(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

fn as_text(raw: &str) -> String {
    let bytes: Vec<u8> = raw.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Terminal {
    fn spawn(command: Command) -> Terminal {
        Terminal {
            session: rexpect::session::spawn_command(command, Some(PATIENCE_MS)).unwrap(),
            transcript: String::new(),
        }
    }

    /// Waits for `needle`; returns what came before it (and keeps both).
    fn expect(&mut self, needle: &str) -> String {
        let before = match self.session.exp_string(&as_bytes(needle)) {
            Ok(raw) => as_text(&raw),
            Err(e) => panic!("waiting for {needle:?}: {e}\n{}", self.transcript),
        };
        self.transcript.push_str(&before);
        self.transcript.push_str(needle);
        before
    }

    fn line(&mut self, text: &str) {
        self.session.send_line(text).unwrap();
    }

    fn control(&mut self, key: char) {
        self.session.send_control(key).unwrap();
    }

    /// Waits for the end of output and the exit status.
    fn end(mut self) -> (String, String, WaitStatus) {
        let rest = as_text(&self.session.exp_eof().unwrap());
        self.transcript.push_str(&rest);
        let status = self.session.process().wait().unwrap();
        (self.transcript, rest, status)
    }
}

/// The command for a client on the `minimo` fixture, with a private state folder (history)
/// and the offline map background.
fn client(dir: &Path, extra: &[&str]) -> Command {
    let db = &fixture("minimo").db;
    let mut command = Command::new(flota_bin());
    command
        .arg("cliente")
        .arg("--db")
        .arg(db)
        .args(extra)
        .env("FLOTA_TILES_URL", "no")
        .env("TERM", "xterm")
        .env("XDG_STATE_HOME", dir.join("estado"))
        .env_remove("NO_COLOR");
    command
}

/// The number the tool list gives `name` (`  4. mapa_recorrido — …`).
fn number_of(listing: &str, name: &str) -> String {
    listing
        .lines()
        .find_map(|line| {
            let (number, rest) = line.trim().split_once(". ")?;
            rest.starts_with(&format!("{name} "))
                .then(|| number.to_owned())
        })
        .unwrap_or_else(|| panic!("{name} not listed:\n{listing}"))
}

/// The path in the last "Imagen guardada en …" line.
fn saved_image(text: &str) -> PathBuf {
    let start = text
        .rfind("Imagen guardada en ")
        .unwrap_or_else(|| panic!("no image saved:\n{text}"))
        + "Imagen guardada en ".len();
    let path: String = text[start..]
        .chars()
        .take_while(|c| !matches!(c, '\r' | '\n' | '\x1b'))
        .collect();
    PathBuf::from(path)
}

/// A fake system viewer (both names, Linux's and macOS's) that records what it was given.
fn fake_viewer(dir: &Path) -> (String, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("visor.log");
    for name in ["xdg-open", "open"] {
        let script = bin.join(name);
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, log)
}

/// Colour codes (SGR), as opposed to the editor's cursor movements.
fn colour_codes(text: &str) -> usize {
    let mut count = 0;
    let mut rest = text;
    while let Some(start) = rest.find("\x1b[") {
        let tail = &rest[start + 2..];
        let params = tail
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(tail.len());
        if tail[params..].starts_with('m') {
            count += 1;
        }
        rest = tail;
    }
    count
}

#[test]
fn an_operator_session_answers_first_and_saves_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let images = dir.path().join("mapas");
    let (path, viewer_log) = fake_viewer(dir.path());
    let mut command = client(
        dir.path(),
        &["--imagenes", images.to_str().unwrap(), "--abrir"],
    );
    command.env("PATH", path);
    let mut t = Terminal::spawn(command);
    let listing = t.expect("flota> ");
    let alertas = number_of(&listing, "alertas");
    let mapa = number_of(&listing, "mapa_recorrido");

    // A tool by number; the wrong choice is asked again, alone, then chosen by number.
    t.line(&alertas);
    t.expect("fecha_inicio: ");
    // A date that does not exist is refused here, before anything is sent.
    t.line("31/02/2026");
    t.expect("el día '31/02/2026' no existe");
    t.expect("fecha_inicio: ");
    t.line("19/08/2026");
    t.expect("fecha_fin: ");
    t.line("hoy");
    t.expect("tipo [1-5]: ");
    t.line("velocidad");
    t.expect("'velocidad' no es una de las opciones");
    t.expect("tipo [exceso_velocidad]: ");
    t.line("1");
    let alerts = t.expect("flota> ");
    assert!(alerts.contains("Fecha inicio:"), "{alerts}");
    assert!(alerts.contains("19/08/2026"), "{alerts}");
    assert!(alerts.contains("exceso_velocidad"), "{alerts}");
    assert_eq!(alerts.matches("fecha_inicio: ").count(), 0, "{alerts}");

    // A mistyped plate: the server's suggestion is accepted with Enter.
    t.line(&mapa);
    t.expect("placa: ");
    t.line("P-123BCE");
    t.expect("fecha: ");
    t.line("19/08/2026");
    t.expect("¿Quiso decir P-123BCD?");
    t.expect("placa [P-123BCD]: ");
    t.line("");
    let map = t.expect("flota> ");
    assert!(map.contains("Placa:"), "{map}");
    assert!(map.contains("P-123BCD"), "{map}");
    assert!(map.contains("Kilómetros:"), "{map}");
    let png = saved_image(&map);
    assert!(png.starts_with(&images), "{}", png.display());
    assert_eq!(
        png.file_name().unwrap().to_str().unwrap(),
        "mapa_recorrido_P-123BCD_2026-08-19.png"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let info = decoder.read_info().unwrap().info().clone();
    assert!(info.width > 0 && info.height > 0);

    // Ctrl-D: a newline, then exit 0.
    t.control('d');
    let (transcript, rest, status) = t.end();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
    assert!(rest.ends_with('\n'), "{rest:?}");
    assert!(!transcript.contains("jsonrpc"), "{transcript}");
    assert!(!transcript.contains("→ "), "{transcript}");
    assert!(
        !transcript.contains(" INFO "),
        "server log shown:\n{transcript}"
    );
    assert!(colour_codes(&transcript) > 0, "a terminal gets colour");

    // The viewer was handed the file (it runs detached: give it a bounded while to finish).
    let deadline = Instant::now() + Duration::from_secs(30);
    let opened = loop {
        let opened = std::fs::read_to_string(&viewer_log).unwrap_or_default();
        if !opened.is_empty() || Instant::now() > deadline {
            break opened;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(opened.trim(), png.to_str().unwrap());

    // The history is kept per user, with what was typed.
    let history =
        std::fs::read_to_string(dir.path().join("estado/flota/historial_cliente")).unwrap();
    for typed in ["19/08/2026", "velocidad", "P-123BCE"] {
        assert!(history.contains(typed), "{typed} not in {history}");
    }
}

#[test]
fn no_color_means_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let images = dir.path().join("mapas");
    let mut command = client(dir.path(), &["--imagenes", images.to_str().unwrap()]);
    command.env("NO_COLOR", "1");
    let mut t = Terminal::spawn(command);
    let listing = t.expect("flota> ");
    // An error line and a suggestion, which are coloured otherwise; Ctrl-C drops the question.
    t.line(&number_of(&listing, "posicion_actual"));
    t.expect("placa: ");
    t.line("P-123BCE");
    t.expect("¿Quiso decir P-123BCD?");
    t.expect("placa [P-123BCD]: ");
    t.control('c');
    t.expect("(cancelado)");
    t.expect("flota> ");
    t.control('d');
    let (transcript, _, status) = t.end();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
    assert!(transcript.contains("✗ No existe la placa"), "{transcript}");
    assert_eq!(colour_codes(&transcript), 0, "{transcript:?}");
}

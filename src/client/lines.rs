//! Where the interactive client's answers come from: a line editor on a terminal, plain lines
//! otherwise.
//!
//! Owns the two sources behind one trait. On a terminal, rustyline gives line editing and a
//! history kept in a per-user file (loaded at the start, saved whole through a temporary file
//! at the end); Ctrl-C abandons the question being asked, Ctrl-D ends the session, and the
//! editor itself moves to a fresh line. From a pipe or a file, lines are read as they come,
//! and the prompt and the answer are written to the output, so it reads as a transcript; the
//! end of input also ends the prompt's line.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use rustyline::config::{Behavior, ColorMode, Config};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;

use crate::plumbing::output::Staged;
use crate::plumbing::spanish;

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 1000;

/// What one read produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Line(String),
    /// Ctrl-C: drop what is being asked.
    Cancel,
    /// Ctrl-D or the end of the input: the session is over.
    End,
}

pub trait Lines {
    /// Shows `prompt` and reads one line (without its newline). `out` is flushed first so
    /// what was printed appears before the prompt.
    fn read(&mut self, out: &mut dyn Write, prompt: &str) -> Input;

    /// Offers a line to the history (empty lines are ignored).
    fn remember(&mut self, _line: &str) {}

    /// Saves the history, if there is one; the reason in Spanish when it could not be.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Lines from a pipe or a file.
pub struct Plain<'a> {
    pub input: &'a mut dyn BufRead,
}

impl Lines for Plain<'_> {
    fn read(&mut self, out: &mut dyn Write, prompt: &str) -> Input {
        let _ = write!(out, "{prompt}");
        let _ = out.flush();
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                // The prompt is left open: close its line as a terminal would.
                let _ = writeln!(out);
                Input::End
            }
            Ok(_) => {
                let line = line.trim_end_matches(['\n', '\r']).to_owned();
                // Nothing else shows what was answered: keep the transcript readable.
                let _ = writeln!(out, "{line}");
                Input::Line(line)
            }
        }
    }
}

/// The line editor, on a terminal.
pub struct Editor {
    editor: rustyline::Editor<(), FileHistory>,
    history: Option<PathBuf>,
}

impl Editor {
    /// An editor whose history lives in `history` (a missing file is a first session).
    pub fn new(history: Option<PathBuf>, color: bool) -> Result<Editor, String> {
        let config = Config::builder()
            .max_history_size(HISTORY_SIZE)
            .and_then(|c| c.history_ignore_dups(true))
            .map_err(|e| format!("no se pudo configurar el editor de líneas: {}", said(&e)))?
            .auto_add_history(false)
            .behavior(Behavior::Stdio)
            .color_mode(if color {
                ColorMode::Enabled
            } else {
                ColorMode::Disabled
            })
            .build();
        let mut editor = rustyline::Editor::with_config(config)
            .map_err(|e| format!("no se pudo iniciar el editor de líneas: {}", said(&e)))?;
        if let Some(path) = &history {
            // A first session has no file yet; an unreadable one starts an empty history.
            let _ = editor.load_history(path);
        }
        Ok(Editor { editor, history })
    }
}

impl Lines for Editor {
    fn read(&mut self, out: &mut dyn Write, prompt: &str) -> Input {
        let _ = out.flush();
        match self.editor.readline(prompt) {
            Ok(line) => Input::Line(line),
            Err(ReadlineError::Interrupted) => Input::Cancel,
            Err(_) => Input::End,
        }
    }

    fn remember(&mut self, line: &str) {
        if !line.trim().is_empty() {
            let _ = self.editor.add_history_entry(line.trim());
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        let Some(path) = &self.history else {
            return Ok(());
        };
        let failed =
            |e: String| format!("no se pudo guardar el historial en {}: {e}", path.display());
        let staged = Staged::new(path).map_err(|e| failed(spanish::io(&e)))?;
        self.editor
            .save_history(staged.temp())
            .map_err(|e| failed(said(&e)))?;
        staged.commit().map_err(|e| failed(spanish::io(&e)))
    }
}

/// rustyline's failure in Spanish: the system's reason, or the library's text only at `debug`.
fn said(err: &ReadlineError) -> String {
    match err {
        ReadlineError::Io(io) => spanish::io(io),
        other => format!("fallo del terminal{}", spanish::original(other)),
    }
}

/// The per-user history file: `$XDG_STATE_HOME/flota/historial_cliente`, else under the home
/// folder (`~/.local/state/flota/…`; on macOS `~/Library/Application Support/flota/…`).
/// `None` (no history) when neither is known. The caller reads the environment.
pub fn history_file(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let state = xdg_state_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let home = PathBuf::from(home?);
            let relative = if cfg!(target_os = "macos") {
                "Library/Application Support"
            } else {
                ".local/state"
            };
            Some(home.join(relative)).filter(|p| p.is_absolute())
        })?;
    Some(state.join("flota").join("historial_cliente"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_echo_prompt_and_answer_and_close_the_last_one() {
        let mut input: &[u8] = b"uno\r\ndos\n";
        let mut lines = Plain { input: &mut input };
        let mut out = Vec::new();
        assert_eq!(lines.read(&mut out, "a> "), Input::Line("uno".into()));
        assert_eq!(lines.read(&mut out, "b> "), Input::Line("dos".into()));
        assert_eq!(lines.read(&mut out, "c> "), Input::End);
        assert_eq!(String::from_utf8(out).unwrap(), "a> uno\nb> dos\nc> \n");
    }

    #[test]
    fn the_history_lives_in_a_per_user_place() {
        let check = |state: Option<&str>, home: Option<&str>, expected: Option<&str>| {
            assert_eq!(
                history_file(state.map(Into::into), home.map(Into::into)),
                expected.map(PathBuf::from),
                "{state:?} {home:?}"
            );
        };
        check(Some("/s"), Some("/h"), Some("/s/flota/historial_cliente"));
        if cfg!(target_os = "linux") {
            check(
                Some("relativo"),
                Some("/h"),
                Some("/h/.local/state/flota/historial_cliente"),
            );
        }
        check(None, None, None);
        check(None, Some("relativo"), None);
    }
}

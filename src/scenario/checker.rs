//! The [`Checker`] that words every semantic error of a scenario and says where it is written.
//!
//! Owns the message shapes shared by the checks (a range, a value, a coordinate, a wall-clock
//! time) and their location: a checker points at a place in the scenario text (a table, an
//! entry of an array of tables, a key in either), so `archivo:línea:columna` names the culprit
//! as syntax errors do. Knows nothing of what is checked.

use std::path::Path;

use super::ScenarioError;
use super::error::{Lines, line_column};
use crate::calendar::ClockTime;
use crate::geometry::earth::LatLon;

/// Builds the messages: every one names the scenario file, and its line when known.
#[derive(Clone, Copy)]
pub(super) struct Checker<'a> {
    path: &'a Path,
    text: &'a str,
    /// `text`'s lines, split once for every place a check names.
    lines: &'a Lines<'a>,
    /// Byte offset of what is being checked.
    at: Option<usize>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(path: &'a Path, text: &'a str, lines: &'a Lines<'a>) -> Checker<'a> {
        Checker {
            path,
            text,
            lines,
            at: None,
        }
    }

    /// A checker pointing at `offset` (kept where it was when `None`).
    pub(super) fn at(self, offset: Option<usize>) -> Checker<'a> {
        Checker {
            at: offset.or(self.at),
            ..self
        }
    }

    /// Pointing at the table `[header]` (or `[[header]]`), where written.
    pub(super) fn table(self, header: &str) -> Checker<'a> {
        self.at(self.lines.table(header))
    }

    /// Pointing at `key = …` inside the table or entry pointed at (the document root when
    /// none), where written; else where it was.
    pub(super) fn key(self, key: &str) -> Checker<'a> {
        self.at(self.lines.key(self.at, key))
    }

    /// Where this checker points, as a byte offset.
    pub(super) fn offset(self) -> Option<usize> {
        self.at
    }

    /// `archivo:línea` of where this checker points, for naming an injection later.
    pub(super) fn place(self) -> String {
        match self.at {
            Some(offset) => format!(
                "{}:{}",
                self.path.display(),
                line_column(self.text, offset).0
            ),
            None => self.path.display().to_string(),
        }
    }

    pub(super) fn error(self, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            path: self.path.to_path_buf(),
            at: self.at.map(|offset| line_column(self.text, offset)),
            message: message.into(),
        }
    }

    pub(super) fn fail<T>(self, message: impl Into<String>) -> Result<T, ScenarioError> {
        Err(self.error(message))
    }

    pub(super) fn range(
        self,
        what: &str,
        range: [f64; 2],
        min: f64,
        max: f64,
    ) -> Result<(), ScenarioError> {
        let [a, b] = range;
        if !(a.is_finite() && b.is_finite()) || a > b {
            return self.fail(format!(
                "{what}: el rango [{a}, {b}] debe ir de menor a mayor"
            ));
        }
        if a < min || b > max {
            return self.fail(format!(
                "{what}: [{a}, {b}] fuera de los límites [{min}, {max}]"
            ));
        }
        Ok(())
    }

    pub(super) fn value(
        self,
        what: &str,
        value: f64,
        min: f64,
        max: f64,
    ) -> Result<(), ScenarioError> {
        if !value.is_finite() || value < min || value > max {
            return self.fail(format!(
                "{what} = {value} fuera de los límites [{min}, {max}]"
            ));
        }
        Ok(())
    }

    pub(super) fn latlon(self, what: &str, pair: [f64; 2]) -> Result<LatLon, ScenarioError> {
        let [lat, lon] = pair;
        if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
            return self.fail(format!(
                "{what}: [{lat}, {lon}] no es una coordenada [lat, lon] válida"
            ));
        }
        Ok(LatLon::new(lat, lon))
    }

    /// A wall-clock time of day: `HH:MM`, `HH:MM:SS`, optionally with an offset.
    pub(super) fn clock(self, what: &str, text: &str) -> Result<ClockTime, ScenarioError> {
        ClockTime::parse(text).ok_or_else(|| {
            self.error(format!(
                "{what}: '{text}' no es una hora HH:MM (00:00 a 23:59, con desfase opcional como 02:30+01:00)"
            ))
        })
    }
}

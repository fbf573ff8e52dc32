//! The kinds of event the engine detects, and the one place their words are spelled.
//!
//! Owns [`EventKind`]: `eventos.tipo`, the tools' arguments and answers, the exports and the
//! evaluation all name a kind through [`EventKind::name`], so a stored row, a tool's `tipo` and
//! a truth line's `tipo` cannot drift apart. What each kind means lives in its detector's file.

/// What the engine detects, one variant per `eventos` row type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// A [`super::Stop`].
    Stop,
    /// An [`super::Overspeed`] episode.
    Overspeed,
    /// A signal [`super::Gap`].
    Gap,
    /// A geofence [`super::Visit`].
    Visit,
}

impl EventKind {
    pub const ALL: [EventKind; 4] = [
        EventKind::Stop,
        EventKind::Overspeed,
        EventKind::Gap,
        EventKind::Visit,
    ];

    /// The Spanish word stored in `eventos.tipo` and shown to users and the model.
    pub const fn name(self) -> &'static str {
        match self {
            EventKind::Stop => "parada",
            EventKind::Overspeed => "exceso_velocidad",
            EventKind::Gap => "perdida_senal",
            EventKind::Visit => "visita_geocerca",
        }
    }

    /// The kind a stored word names, if any.
    pub fn from_name(word: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.name() == word)
    }
}

/// A stop long enough for an alert ([`super::Stop::is_long`]). Not a row type of its own (a
/// `parada` row flagged `prolongada`), but a type of alert and of evaluation under this word.
pub const LONG_STOP: &str = "parada_prolongada";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_names_one_kind() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.name()), Some(kind));
        }
        assert!(EventKind::ALL.iter().all(|k| k.name() != LONG_STOP));
        assert_eq!(EventKind::from_name("parada_larga"), None);
    }
}

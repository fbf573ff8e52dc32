//! MCP logging levels (`logging/setLevel`, `notifications/message`): the eight syslog levels
//! and which messages a client asked to see.
//!
//! Legacy sessions set a level once with `logging/setLevel`; 2026-07-28 requests carry it in
//! `_meta["io.modelcontextprotocol/logLevel"]`, and without it nothing is sent. The core's own
//! diagnostics go to stderr, never here: these messages are the tools' words to the client.

/// Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub fn parse(text: &str) -> Option<LogLevel> {
        Self::ALL.into_iter().find(|l| l.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Every level's name, for an error message.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|l| l.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_order() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("verbose"), None);
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
    }
}

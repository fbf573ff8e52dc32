//! MCP protocol versions and what each one allows on the wire.
//!
//! Owns the list of supported revisions and the feature gates derived from them (which tool
//! fields exist, how argument errors are reported, which era a version belongs to). It knows
//! nothing of sessions or tools.

use std::fmt;

/// A protocol revision this core speaks. Ordered oldest to newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    /// The stateless ("modern") era: no handshake, per-request `_meta`.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Handshake-era versions, newest first: the order `initialize` prefers.
    pub const LEGACY: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// Stateless-era versions.
    pub const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    /// What `initialize` answers when the client asks for a version it lacks.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    pub fn parse(text: &str) -> Option<Self> {
        Self::all().into_iter().find(|v| v.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Every supported version, newest first (modern, then legacy).
    pub fn all() -> [ProtocolVersion; 5] {
        [
            ProtocolVersion::V2026_07_28,
            ProtocolVersion::V2025_11_25,
            ProtocolVersion::V2025_06_18,
            ProtocolVersion::V2025_03_26,
            ProtocolVersion::V2024_11_05,
        ]
    }

    pub fn all_strs() -> Vec<&'static str> {
        Self::all().iter().map(|v| v.as_str()).collect()
    }

    pub fn is_modern(self) -> bool {
        self >= ProtocolVersion::V2026_07_28
    }

    /// `ToolAnnotations` exist from 2025-03-26.
    pub fn has_annotations(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// `title`, `outputSchema` and `structuredContent` exist from 2025-06-18.
    pub fn has_structured_output(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// From 2025-11-25 (SEP-1303) invalid arguments are reported as an `isError` result so the
    /// model can correct itself; earlier sessions get the `-32602` JSON-RPC error their
    /// revisions call for.
    pub fn argument_errors_are_results(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_supported_version_and_nothing_else() {
        for v in ProtocolVersion::all() {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("1999-01-01"), None);
        assert_eq!(ProtocolVersion::parse(""), None);
    }

    #[test]
    fn gates_follow_the_changelog() {
        use ProtocolVersion::*;
        assert!(!V2024_11_05.has_annotations());
        assert!(V2025_03_26.has_annotations() && !V2025_03_26.has_structured_output());
        assert!(V2025_06_18.has_structured_output() && !V2025_06_18.argument_errors_are_results());
        assert!(V2025_11_25.argument_errors_are_results() && !V2025_11_25.is_modern());
        assert!(V2026_07_28.is_modern());
        assert!(ProtocolVersion::LEGACY.iter().all(|v| !v.is_modern()));
    }
}

//! What a finished map drew for each counted element: the debug record that lets a test hold
//! the picture to the figures the tool reports beside it.
//!
//! Owns [`Mark`]: one per stop, signal loss, speeding episode and geofence of the scene (in
//! the scene's order), saying where in the picture its marker landed, which colour is there,
//! and the label it got. `draw` fills the list as it paints; nothing reads it to decide what
//! to draw, and it never reaches the tool's output.

/// Which scene element a mark stands for; `index` is its place in the scene's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A stop; `long` as the scene says (a long stop's marker is dark red).
    Stop { index: usize, long: bool },
    /// A signal loss: the middle of its dashed jump, or its marker where the unit stood still
    /// or is silent still.
    Gap { index: usize },
    /// A speeding episode, at its top speed.
    Speeding { index: usize },
    /// A geofence's name; visited fences are always named.
    Fence { index: usize, visited: bool },
}

/// Where one element was drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub kind: MarkKind,
    /// Output pixel of the marker (or of the label's centre, for a fence).
    pub at: (f64, f64),
    /// How far from `at` the marker's colour must show, in output pixels.
    pub radius_px: f64,
    /// The marker's colour (for a fence, its label's ink).
    pub rgb: (u8, u8, u8),
    /// The label placed for it, if one found room.
    pub label: Option<String>,
}

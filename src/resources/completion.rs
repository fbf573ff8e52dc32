//! Completions for the fleet's prompt arguments and resource templates: plates, geofence
//! names, route names and date words, each matched on what was typed so far with case,
//! accents, spaces and dashes ignored (`p12` → `P-123BCD`, `cedis` → `CEDIS Zona 12`).
//!
//! Owns the candidate lists and the prefix rule; knows nothing of the protocol (the core asks
//! and trims to its maximum).

use chrono::Duration;

use crate::calendar::weekday_es;
use crate::fleet::Fleet;
use crate::fleet::text::{fold, plate_key};

/// The candidates whose folded form starts like the folded `typed` (or contains it, after
/// those that start with it), in their order.
fn matching(candidates: Vec<String>, typed: &str, key: fn(&str) -> String) -> Vec<String> {
    let wanted = key(typed);
    let (mut starts, mut contains): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for candidate in candidates {
        let folded = key(&candidate);
        if folded.starts_with(&wanted) {
            starts.push(candidate);
        } else if !wanted.is_empty() && folded.contains(&wanted) {
            contains.push(candidate);
        }
    }
    starts.extend(contains);
    starts
}

fn words(text: &str) -> String {
    fold(text)
}

/// Plates of the fleet, active units first.
pub fn complete_plates(fleet: &Fleet, typed: &str) -> Vec<String> {
    let Ok(snapshot) = fleet.snapshot() else {
        return Vec::new();
    };
    let mut vehicles: Vec<_> = snapshot.vehicles.iter().collect();
    vehicles.sort_by_key(|v| (!v.active, v.plate.clone()));
    let plates = vehicles.iter().map(|v| v.plate.clone()).collect();
    matching(plates, typed, plate_key)
}

pub fn complete_fences(fleet: &Fleet, typed: &str) -> Vec<String> {
    let Ok(snapshot) = fleet.snapshot() else {
        return Vec::new();
    };
    let names = snapshot
        .fences
        .iter()
        .map(|f| f.fence.name.clone())
        .collect();
    matching(names, typed, words)
}

pub fn complete_routes(fleet: &Fleet, typed: &str) -> Vec<String> {
    let Ok(snapshot) = fleet.snapshot() else {
        return Vec::new();
    };
    let names = snapshot.routes.iter().map(|r| r.name.clone()).collect();
    matching(names, typed, words)
}

/// `hoy`, `ayer`, `anteayer`, the weekday names from today backwards, and the last week's
/// dates (`AAAA-MM-DD`), as the tools accept them.
pub fn complete_dates(fleet: &Fleet, typed: &str) -> Vec<String> {
    let mut candidates: Vec<String> = ["hoy", "ayer", "anteayer"].map(String::from).to_vec();
    if let Ok(snapshot) = fleet.snapshot() {
        let days: Vec<_> = (0..7)
            .map(|back| snapshot.today - Duration::days(back))
            .collect();
        candidates.extend(days.iter().map(|d| weekday_es(*d).to_owned()));
        candidates.extend(days.iter().map(|d| d.to_string()));
    }
    matching(candidates, typed, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_ignore_case_accents_and_dashes() {
        let plates = vec![
            "P-123BCD".to_owned(),
            "P-456DEF".to_owned(),
            "C-123XYZ".to_owned(),
        ];
        assert_eq!(matching(plates.clone(), "p12", plate_key), ["P-123BCD"]);
        assert_eq!(matching(plates.clone(), "", plate_key), plates);
        // Starting matches first, then those that only contain it.
        assert_eq!(matching(plates, "123", plate_key), ["P-123BCD", "C-123XYZ"]);
        let days = vec!["miércoles".to_owned(), "martes".to_owned()];
        assert_eq!(matching(days, "MIE", words), ["miércoles"]);
    }
}

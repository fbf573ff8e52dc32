//! Matching what people type: plates and geofence names.
//!
//! Owns text folding (case, accents, spaces, separators), plate keys, edit distance, and the
//! resolution rules: a plate matches after normalisation only, near misses become suggestions;
//! a geofence name matches exactly, else as a unique partial name, and ambiguity is listed.

/// Lower case, accents removed, runs of spaces collapsed.
pub fn fold(text: &str) -> String {
    let mapped: String = text
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'á' | 'à' | 'ä' | 'â' => 'a',
            'é' | 'è' | 'ë' | 'ê' => 'e',
            'í' | 'ì' | 'ï' | 'î' => 'i',
            'ó' | 'ò' | 'ö' | 'ô' => 'o',
            'ú' | 'ù' | 'ü' | 'û' => 'u',
            'ñ' => 'n',
            other => other,
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A plate with spaces and separators removed, upper case: `p 123-bcd` → `P123BCD`.
pub fn plate_key(text: &str) -> String {
    crate::scenario::plate_key(text)
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

/// Resolution of a name against a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    One(usize),
    /// Several names contain the text.
    Ambiguous(Vec<usize>),
    /// No match; the closest names, best first.
    None(Vec<usize>),
}

/// Finds a plate: equal keys only; otherwise up to three suggestions within two edits or
/// sharing the digits.
pub fn find_plate(input: &str, plates: &[&str]) -> Found {
    let key = plate_key(input);
    let keys: Vec<String> = plates.iter().map(|p| plate_key(p)).collect();
    if let Some(index) = keys.iter().position(|k| *k == key) {
        return Found::One(index);
    }
    let digits: String = key.chars().filter(char::is_ascii_digit).collect();
    let mut near: Vec<(usize, usize)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (edit_distance(&key, k), i))
        .filter(|(d, i)| *d <= 2 || (digits.len() >= 3 && keys[*i].contains(&digits)))
        .collect();
    near.sort();
    Found::None(near.into_iter().take(3).map(|(_, i)| i).collect())
}

/// Finds a geofence by name: folded equality wins; else a unique folded substring.
pub fn find_name(input: &str, names: &[&str]) -> Found {
    let wanted = fold(input);
    let folded: Vec<String> = names.iter().map(|n| fold(n)).collect();
    if let Some(index) = folded.iter().position(|f| *f == wanted) {
        return Found::One(index);
    }
    if !wanted.is_empty() {
        let containing: Vec<usize> = folded
            .iter()
            .enumerate()
            .filter(|(_, f)| f.contains(&wanted))
            .map(|(i, _)| i)
            .collect();
        match containing.len() {
            0 => {}
            1 => return Found::One(containing[0]),
            _ => return Found::Ambiguous(containing),
        }
    }
    let mut near: Vec<(usize, usize)> = folded
        .iter()
        .enumerate()
        .map(|(i, f)| (edit_distance(&wanted, f), i))
        .filter(|(d, _)| *d <= 3)
        .collect();
    near.sort();
    Found::None(near.into_iter().map(|(_, i)| i).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLATES: [&str; 3] = ["P-123BCD", "P-456DEF", "P-124BCD"];
    const FENCES: [&str; 4] = [
        "CEDIS Zona 12",
        "Bodega Villa Nueva",
        "Bodega Mixco",
        "Centro Histórico",
    ];

    #[test]
    fn plates_normalise_and_suggest() {
        assert_eq!(find_plate("p123bcd", &PLATES), Found::One(0));
        assert_eq!(find_plate(" P 123 BCD ", &PLATES), Found::One(0));
        assert_eq!(find_plate("P-456-DEF", &PLATES), Found::One(1));
        assert_eq!(find_plate("P-123BCE", &PLATES), Found::None(vec![0, 2]));
        assert_eq!(find_plate("456", &PLATES), Found::None(vec![1]));
        assert_eq!(find_plate("ZZZ", &PLATES), Found::None(vec![]));
    }

    #[test]
    fn fence_names_ignore_case_and_accents() {
        assert_eq!(find_name("cedis zona 12", &FENCES), Found::One(0));
        assert_eq!(find_name("centro historico", &FENCES), Found::One(3));
        assert_eq!(find_name("CEDIS", &FENCES), Found::One(0));
        assert_eq!(find_name("mixco", &FENCES), Found::One(2));
        assert_eq!(find_name("bodega", &FENCES), Found::Ambiguous(vec![1, 2]));
        assert_eq!(find_name("Bodega Mixko", &FENCES), Found::None(vec![2]));
        assert_eq!(find_name("Marte", &FENCES), Found::None(vec![]));
    }
}

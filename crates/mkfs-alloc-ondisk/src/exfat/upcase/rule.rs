//! The rule that generates the exFAT recommended up-case table (see the
//! `upcase` module for the rule and its sources). Compiled by the build
//! script, which writes the compressed table into the library, and by the
//! library's tests, which check the table against it.

use alloc::vec::Vec;

/// Code point ranges of cased characters encoded after Unicode 5.0. A case
/// pair with a member in one of these ranges is not in the recommended table.
/// Each range covers only characters added later (or unassigned ones), never
/// a 2006 character that has a mapping in the table.
const POST_UNICODE_5_0: &[(u16, u16)] = &[
    // Greek Heta, archaic Sampi, Pamphylian Digamma (5.1).
    (0x0370, 0x0377),
    // Greek capital Yot (7.0), capital Kai (5.1).
    (0x037F, 0x037F),
    (0x03CF, 0x03CF),
    // Cyrillic Supplement U+0514.. (5.1 to 7.0).
    (0x0514, 0x052F),
    // Georgian capitals Yn, Aen (6.1).
    (0x10C7, 0x10C7),
    (0x10CD, 0x10CD),
    // Cherokee U+13F0..U+13FD (8.0): the small letters, whose capitals are old.
    (0x13F0, 0x13FD),
    // Cyrillic Extended-C (9.0, 16.0) and Georgian Mtavruli (11.0), the new
    // upper case of the old Georgian Mkhedruli letters.
    (0x1C80, 0x1CBF),
    // Latin capital sharp s (5.1), the new upper case of U+00DF.
    (0x1E9E, 0x1E9E),
    // Middle-Welsh ll, v and y with loop (5.1).
    (0x1EFA, 0x1EFF),
    // Glagolitic Caudate Chrivi (14.0).
    (0x2C2F, 0x2C2F),
    (0x2C5F, 0x2C5F),
    // Latin Extended-C additions (5.1, 5.2): new upper cases of IPA letters.
    (0x2C6D, 0x2C73),
    (0x2C7E, 0x2C7F),
    // Coptic additions (5.1, 6.1).
    (0x2CEB, 0x2CF3),
    // Georgian small Yn, Aen (6.1).
    (0x2D27, 0x2D27),
    (0x2D2D, 0x2D2D),
    // Cyrillic Extended-B and Latin Extended-D (5.1 onwards): also the new
    // upper cases of old letters such as U+019B, U+0265, U+1D79.
    (0xA640, 0xA7FF),
    // Latin Extended-E and Cherokee Supplement (7.0, 8.0).
    (0xAB30, 0xABBF),
];

/// Case pairs the spec's table stores backwards: the entry of the capital
/// holds the small letter and the small letter maps to itself. Listed as
/// (small, capital).
const REVERSED_PAIRS: &[(u16, u16)] = &[
    // Latin A with stroke / T with diagonal stroke: their small forms were new
    // in Unicode 5.0 (U+2C65, U+2C66); the table maps U+023A -> U+2C65 and
    // U+023E -> U+2C66.
    (0x2C65, 0x023A),
    (0x2C66, 0x023E),
    // Greek eta / omega with ypogegrammeni: the table maps the capitals
    // U+1FCC -> U+1FC3 and U+1FFC -> U+1FF3 (while alpha, U+1FB3 -> U+1FBC,
    // goes the right way).
    (0x1FC3, 0x1FCC),
    (0x1FF3, 0x1FFC),
];

/// U+03C2 GREEK SMALL LETTER FINAL SIGMA. No capital lower-cases to it, so rule
/// 1 leaves it alone, but the table up-cases it to U+03A3 like
/// `char::to_uppercase` does.
const FINAL_SIGMA: (u16, u16) = (0x03C2, 0x03A3);

/// The only character of `chars`, or `None` if there are zero or several.
fn single(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    match chars.next() {
        None => Some(first),
        Some(_) => None,
    }
}

/// Whether `unit` is in one of the [`POST_UNICODE_5_0`] ranges.
fn is_post_unicode_5_0(unit: u16) -> bool {
    POST_UNICODE_5_0
        .iter()
        .any(|&(first, last)| (first..=last).contains(&unit))
}

/// Rules 1 and 2: the simple upper-case mapping of 2006 BMP case pairs.
pub(crate) fn case_pair_mapping() -> Vec<u16> {
    let mut map: Vec<u16> = (0..=u16::MAX).collect();
    for upper in 0..=u16::MAX {
        // Surrogate code units are not characters and map to themselves.
        let Some(upper_char) = char::from_u32(u32::from(upper)) else {
            continue;
        };
        let Some(lower_char) = single(upper_char.to_lowercase()) else {
            continue;
        };
        let Ok(lower) = u16::try_from(u32::from(lower_char)) else {
            continue;
        };
        if lower == upper || is_post_unicode_5_0(lower) || is_post_unicode_5_0(upper) {
            continue;
        }
        let mut lower_upper = lower_char.to_uppercase();
        let is_pair = match (lower_upper.next(), lower_upper.next()) {
            // Round trip: `upper` is the upper case of `lower`.
            (Some(only), None) => only == upper_char,
            // Full upper case expands; the simple one is `upper`.
            (Some(_), Some(_)) => true,
            (None, _) => false,
        };
        if is_pair {
            if let Some(entry) = map.get_mut(usize::from(lower)) {
                *entry = upper;
            }
        }
    }
    map
}

/// Rule 3: the entries where the spec's recommended table differs from the
/// case-pair rule.
pub(crate) fn apply_spec_quirks(map: &mut [u16]) {
    let mut set = |index: u16, value: u16| {
        if let Some(entry) = map.get_mut(usize::from(index)) {
            *entry = value;
        }
    };
    set(FINAL_SIGMA.0, FINAL_SIGMA.1);
    for &(small, capital) in REVERSED_PAIRS {
        set(small, small);
        set(capital, small);
    }
}

/// The spec's recommended table, expanded: rules 1 to 3 applied to the
/// identity mapping of the 65536 code units.
pub(crate) fn recommended_map() -> Vec<u16> {
    let mut map = case_pair_mapping();
    apply_spec_quirks(&mut map);
    map
}

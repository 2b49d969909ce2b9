//! The tokens the user has picked in the text, shared by every view.
//!
//! A click picks one token, shift-click (or Ctrl/Cmd-click) adds or removes
//! one. The selection is kept as (position, token id) pairs: when a new
//! result arrives after an edit, positions move, so each picked token is
//! looked up again by its id near its old position rather than blindly kept
//! at a position that now holds another word.

/// The picked tokens, ascending by position, at most one entry a position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSelection {
    picked: Vec<(usize, u32)>,
}

impl TokenSelection {
    /// Whether nothing is picked.
    pub fn is_empty(&self) -> bool {
        self.picked.is_empty()
    }

    /// How many tokens are picked.
    pub fn len(&self) -> usize {
        self.picked.len()
    }

    /// The picked positions, ascending.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.picked.iter().map(|&(position, _)| position)
    }

    /// The picked (position, token id) pairs, ascending by position.
    pub fn entries(&self) -> &[(usize, u32)] {
        &self.picked
    }

    /// Whether `position` is picked.
    pub fn contains(&self, position: usize) -> bool {
        self.picked
            .binary_search_by_key(&position, |&(p, _)| p)
            .is_ok()
    }

    /// Whether a token with this vocabulary id is picked (at any position).
    pub fn contains_id(&self, token_id: u32) -> bool {
        self.picked.iter().any(|&(_, id)| id == token_id)
    }

    /// A click on the token at `position` (whose id is `token_id`). With
    /// `add` (shift held) the token is added or removed; otherwise it
    /// becomes the only one picked, and clicking the only picked token again
    /// clears the selection.
    pub fn click(&mut self, position: usize, token_id: u32, add: bool) {
        let found = self.picked.binary_search_by_key(&position, |&(p, _)| p);
        if add {
            match found {
                Ok(index) => {
                    self.picked.remove(index);
                }
                Err(index) => self.picked.insert(index, (position, token_id)),
            }
        } else if found.is_ok() && self.picked.len() == 1 {
            self.picked.clear();
        } else {
            self.picked = vec![(position, token_id)];
        }
    }

    /// Picks nothing.
    pub fn clear(&mut self) {
        self.picked.clear();
    }

    /// Moves the selection onto a new token sequence `ids`: a token still at
    /// its position stays; otherwise the nearest position with the same id
    /// (not already taken) takes its place; a token whose id is gone is
    /// dropped.
    pub fn follow(&mut self, ids: &[u32]) {
        let mut kept: Vec<(usize, u32)> = Vec::with_capacity(self.picked.len());
        let taken = |kept: &[(usize, u32)], p: usize| kept.iter().any(|&(q, _)| q == p);
        for &(position, id) in &self.picked {
            if ids.get(position) == Some(&id) && !taken(&kept, position) {
                kept.push((position, id));
                continue;
            }
            // Search outwards, nearer positions first, the earlier on ties.
            let nearest = (1..ids.len().max(position + 1)).find_map(|d| {
                [position.checked_sub(d), Some(position + d)]
                    .into_iter()
                    .flatten()
                    .find(|&p| ids.get(p) == Some(&id) && !taken(&kept, p))
            });
            if let Some(p) = nearest {
                kept.push((p, id));
            }
        }
        kept.sort_unstable();
        kept.dedup_by_key(|&mut (p, _)| p);
        self.picked = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn click_picks_one_and_shift_click_adds_and_removes() {
        let mut s = TokenSelection::default();
        s.click(5, 50, false);
        assert_eq!(s.entries(), &[(5, 50)]);
        s.click(2, 20, true);
        assert_eq!(s.entries(), &[(2, 20), (5, 50)]);
        s.click(5, 50, true);
        assert_eq!(s.entries(), &[(2, 20)]);
        s.click(7, 70, false);
        assert_eq!(s.entries(), &[(7, 70)]);
        s.click(7, 70, false);
        assert!(s.is_empty(), "clicking the only picked token clears it");
        assert!(!s.contains(7));
    }

    #[test]
    fn follow_keeps_tokens_that_moved_and_drops_vanished_ones() {
        let mut s = TokenSelection::default();
        s.click(1, 10, true);
        s.click(3, 30, true);
        s.click(4, 40, true);
        // A token was inserted before position 3; id 40 is gone.
        s.follow(&[0, 10, 99, 98, 30, 41]);
        assert_eq!(s.entries(), &[(1, 10), (4, 30)]);
        s.follow(&[]);
        assert!(s.is_empty());
    }
}

//! A head's selected pairs as the views outline and list them: the
//! analysis' own where it kept them, else made again off the UI thread.
//!
//! A long input's heads keep only the number of their pairs
//! ([`SelectedPairs::is_kept`]: past 262,144 a head, which at 32,768
//! tokens is every head, 21 MB each); a view that shows a head's pairs asks
//! here, and they are made one head at a time on a thread
//! ([`head_selected_pairs`], about as long as that head's part of the
//! analysis) and kept for the heads shown lately. A head whose thread ends
//! without its pairs (it panicked, or no thread could start) is marked
//! failed and not tried again for that result: asked every frame, it
//! would otherwise start a thread every frame.

use crate::analysis::{head_selected_pairs, SelectedPairs};
use crate::app::jobs::spawn_job;
use crate::captures::HeadId;
use crate::pipeline::RunOutput;
use crate::worker::Waker;
use crossbeam_channel::{Receiver, TryRecvError};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Heads whose made pairs are kept (a layer's, with room).
const KEPT_HEADS: usize = 32;

/// The pairs made for one result.
#[derive(Default)]
pub struct HeadPairs {
    generation: u64,
    made: HashMap<HeadId, SelectedPairs>,
    making: Option<(HeadId, Receiver<SelectedPairs>)>,
    /// Heads whose thread ended without an answer.
    failed: HashSet<HeadId>,
}

impl HeadPairs {
    /// Asks for the pairs of `head` in `output` (result `generation`):
    /// takes what the thread finished, and starts the head when its pairs
    /// are neither kept, made nor failed and no other head is being made
    /// (call it every frame for every head shown: they are made in turn).
    pub fn request(
        &mut self,
        output: &Arc<RunOutput>,
        generation: u64,
        head: HeadId,
        wake: &Waker,
    ) {
        if generation != self.generation {
            *self = Self {
                generation,
                ..Self::default()
            };
        }
        if !self.take_finished() {
            return;
        }
        let kept = output
            .analysis
            .head(head)
            .is_none_or(|f| f.selected_pairs.is_kept());
        if kept || self.made.contains_key(&head) || self.failed.contains(&head) {
            return;
        }
        let output = Arc::clone(output);
        let receiver = spawn_job("head pairs", wake.clone(), move || {
            let options = &output.analysis.options;
            head_selected_pairs(&output.input.tokens, &output.captures, options, head)
        });
        self.making = Some((head, receiver));
    }

    /// Takes the answer of the head being made, if its thread ended;
    /// `false` while it still runs.
    fn take_finished(&mut self) -> bool {
        let Some((made_head, receiver)) = &self.making else {
            return true;
        };
        match receiver.try_recv() {
            Ok(pairs) => {
                if self.made.len() >= KEPT_HEADS {
                    self.made.clear();
                }
                self.made.insert(*made_head, pairs);
            }
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => {
                self.failed.insert(*made_head);
            }
        }
        self.making = None;
        true
    }

    /// The pairs of `head`, `None` while they are being made, where they
    /// could not be made ([`HeadPairs::failed`]), or where the analysis
    /// has no such head.
    pub fn get<'a>(&'a self, output: &'a RunOutput, head: HeadId) -> Option<&'a SelectedPairs> {
        let kept = &output.analysis.head(head)?.selected_pairs;
        if kept.is_kept() {
            Some(kept)
        } else {
            self.made.get(&head)
        }
    }

    /// Whether making the pairs of `head` ended without them.
    pub fn failed(&self, head: HeadId) -> bool {
        self.failed.contains(&head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_whose_thread_ends_without_its_pairs_is_marked_failed() {
        let head = HeadId::new(2, 3);
        let (sender, receiver) = crossbeam_channel::bounded(1);
        let mut pairs = HeadPairs {
            making: Some((head, receiver)),
            ..HeadPairs::default()
        };
        assert!(!pairs.take_finished(), "still running");
        drop(sender);
        assert!(pairs.take_finished());
        assert!(pairs.failed(head) && pairs.making.is_none());
        assert!(!pairs.failed(HeadId::new(2, 4)));
    }
}

//! Long benchmark programs, built a piece at a time as the run reaches them: a million frames
//! or reads cost the memory of one piece, and a short run builds only the pieces it runs.
//!
//! ```text
//!   steps 0 .. n in pieces of P:  piece i = ops of steps [i·P, min(n, (i+1)·P))
//!                                           + Op::Continue(piece i+1)   (the last: + tail)
//! ```
//!
//! Bins laid out over a piece (`sample::layout`) use the piece's own salt, [`salt`], which is
//! the program's salt for piece 0: a program of at most P steps is built as one piece, exactly
//! as a program built whole.

use std::ops::Range;
use std::rc::Rc;

use crate::sched::task::{NextPiece, Op, Pieces};

/// A program of `steps` steps in pieces of `per_piece`: `emit(piece, steps, ops)` appends the
/// operations of the steps in range, and `tail` ends the last piece (an exit, usually).
pub fn program(
    steps: usize,
    per_piece: usize,
    tail: Vec<Op>,
    emit: impl Fn(usize, Range<usize>, &mut Vec<Op>) + 'static,
) -> Rc<[Op]> {
    Rc::new(Steps { steps, per_piece: per_piece.max(1), tail, emit }).piece(0)
}

/// The salt of piece `piece` of a program whose layouts use `salt`.
pub fn salt(salt: u64, piece: usize) -> u64 {
    salt ^ ((piece as u64) << 32)
}

struct Steps<F> {
    steps: usize,
    per_piece: usize,
    tail: Vec<Op>,
    emit: F,
}

impl<F: Fn(usize, Range<usize>, &mut Vec<Op>) + 'static> Pieces for Steps<F> {
    fn piece(self: Rc<Self>, index: usize) -> Rc<[Op]> {
        let start = (index * self.per_piece).min(self.steps);
        let end = (start + self.per_piece).min(self.steps);
        let mut ops = Vec::new();
        (self.emit)(index, start..end, &mut ops);
        if end < self.steps {
            ops.push(Op::Continue(NextPiece { source: self.clone(), index: index + 1 }));
        } else {
            ops.extend(self.tail.iter().cloned());
        }
        ops.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::task::Mark;

    fn mark(step: usize) -> Op {
        Op::Mark(Mark::Add { counter: 0, amount: step as u64 })
    }

    /// Follow a program through its pieces, collecting every operation but the links.
    fn unroll(first: Rc<[Op]>) -> (Vec<Op>, usize) {
        let (mut ops, mut pieces, mut piece) = (Vec::new(), 1, first);
        while let Some(Op::Continue(next)) = piece.last() {
            let next = next.clone();
            ops.extend(piece[..piece.len() - 1].iter().cloned());
            piece = next.load();
            pieces += 1;
        }
        ops.extend(piece.iter().cloned());
        (ops, pieces)
    }

    #[test]
    fn pieces_hold_every_step_once_in_order() {
        let emit = |_: usize, steps: Range<usize>, ops: &mut Vec<Op>| ops.extend(steps.map(mark));
        let (ops, pieces) = unroll(program(10, 4, vec![Op::Exit], emit));
        let whole: Vec<Op> = (0..10).map(mark).chain([Op::Exit]).collect();
        assert_eq!((ops, pieces), (whole.clone(), 3));
        // A program that fits one piece is built whole.
        assert_eq!(&*program(10, 10, vec![Op::Exit], emit), &whole[..]);
        assert_eq!(&*program(0, 10, vec![Op::Exit], emit), &[Op::Exit][..]);
    }

    #[test]
    fn piece_zero_keeps_the_salt() {
        assert_eq!(salt(400, 0), 400);
        assert_ne!(salt(400, 1), salt(400, 2));
    }
}

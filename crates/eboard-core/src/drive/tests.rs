//! The driver on fixed inputs and on seeded random ones: the properties hold,
//! and the inputs reach every decision, accepted and refused.

use super::*;
use crate::sim::Seeded;

#[test]
fn a_few_fixed_inputs_hold() {
    for data in [
        &b""[..],
        &[9, 0, 9, 1, 9, 2, 7, 0, 4, 6, 0][..],
        &[4, 255, 1, 5, 8, 0, 6, 200, 3, 6, 200, 3],
    ] {
        drive(data).unwrap();
    }
}

fn frame(op: u8, wait: u8, a: u8, b: u8, c: u8) -> Frame {
    Frame {
        op,
        wait,
        a,
        b,
        c,
        d: 0,
    }
}

/// Four plies, a take-back to ply 1 and a result each undone at once, a
/// malformed call: what the frames say is what the driver does.
#[test]
fn frames_drive_moves_and_calls() {
    let mut frames: Vec<Frame> = (0..4).map(|i| frame(9, 0x40, i, 0, 0)).collect();
    frames.extend([
        frame(14, 0x40, 3, 1, 0x10),
        frame(15, 0x08, 6, 0, 0x11),
        frame(18, 0x08, 17, 0, 0),
    ]);
    let t = drive(&bytes(1, &frames)).unwrap();
    assert_eq!((t.plies, t.undone, t.malformed), (4, 2, 1), "{t:?}");
    assert_eq!(t.accepted.get("Undo"), Some(&2), "{t:?}");
    assert_eq!(t.accepted.get("Reinstate"), Some(&1), "{t:?}");
    assert_eq!(t.accepted.get("SetResult"), Some(&1), "{t:?}");
}

/// `n` inputs of up to `len` bytes from `seed`, their tallies summed.
fn seeded(seed: u64, n: usize, len: u64) -> Tally {
    let mut rng = Seeded::new(seed);
    let mut sum = Tally::default();
    for _ in 0..n {
        let data: Vec<u8> = (0..rng.range(0, len)).map(|_| rng.range(0, 255) as u8).collect();
        match drive(&data) {
            Ok(t) => sum.add(&t),
            Err(e) => panic!("{e}\ninput: {data:?}"),
        }
    }
    sum
}

/// Random inputs reach every decision both accepted and refused, malformed
/// calls, undos right after a take-back or a result, and real games.
/// `DRIVE_INPUTS=N` runs N inputs instead of 120, `DRIVE_SEED=S` from
/// another seed than 7, `DRIVE_LEN=L` of up to L bytes instead of 600 (their
/// tally is printed).
#[test]
fn random_inputs_reach_every_decision() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let n = env("DRIVE_INPUTS", 120) as usize;
    let sum = seeded(env("DRIVE_SEED", 7), n, env("DRIVE_LEN", 600));
    eprintln!("{n} inputs: {sum:?}");
    for method in [
        "NewGame",
        "SetPosition",
        "Reinstate",
        "SetResult",
        "SetTimeControl",
        "SetClock",
        "AddTime",
        "Undo",
    ] {
        assert!(
            sum.accepted.get(method).is_some_and(|n| *n > 0),
            "{method} never accepted: {sum:?}"
        );
        assert!(
            sum.refused.get(method).is_some_and(|n| *n > 0),
            "{method} never refused: {sum:?}"
        );
    }
    assert!(sum.malformed > 0 && sum.undone > 0 && sum.plies > 100, "{sum:?}");
}

//! The fault campaign: every fault on many games through relays between the
//! emulated boards and a real daemon.

use super::*;

async fn campaign(runs: Vec<Run>) -> Vec<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let n = runs.len();
    let (logs, plies): (Vec<SensorLog>, Vec<_>) = runs.iter().map(game_log).unzip();
    let faults = |i: usize| match runs[i].fault {
        Fault::Drop(p) => LineFaults {
            drop: p,
            flip: 0.0,
            seed: runs[i].seed,
        },
        Fault::Flip(p) => LineFaults {
            drop: 0.0,
            flip: p,
            seed: runs[i].seed,
        },
        Fault::Cuts => LineFaults::CLEAN,
    };
    let (emulators, mut relays, devices) =
        relay::relayed_boards(logs.clone(), SPEED, 20000, dir.path(), faults);
    let daemon = Daemon::start(devices, config(dir.path(), n), BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let collector = common::replayed::collect(&daemon);
    // The cuts, on their own clock (log time is real time times SPEED).
    let started = tokio::time::Instant::now();
    let mut cutters = Vec::new();
    for (i, (run, log)) in runs.iter().zip(&logs).enumerate() {
        if run.fault != Fault::Cuts {
            continue;
        }
        let end = log.records.last().map_or(0, |r| r.time.micros());
        let mut rng = Seeded::new(run.seed ^ 0xc475);
        let count = (run.moves.len() / 4).clamp(1, 20);
        let plan = cut_plan(&mut rng, end, count);
        let cuts = relays[i].0.clone();
        cutters.push(tokio::spawn(async move {
            for (at, length) in plan {
                let real = |us: u64| Duration::from_secs_f64(us as f64 / 1e6 / SPEED);
                tokio::time::sleep_until(started + real(at)).await;
                let _ = cuts.send(real(length)).await;
            }
        }));
    }
    // The emulators' logs take this long to play (log time over SPEED), and
    // their end is not observable from here: the wait ends when every board has
    // its game (every move, or for a board whose line is cut as many plies, the
    // order across a cut judged below), else 20 s past the longest log's end, as
    // faults may keep the outcome from coming.
    let longest = logs
        .iter()
        .map(|l| l.records.last().map_or(0, |r| r.time.micros()))
        .max()
        .unwrap_or(0);
    let boards = daemon.boards();
    let expected: Vec<Vec<String>> = runs.iter().map(|r| sans(&r.start, &r.moves)).collect();
    let until = started + Duration::from_secs_f64(longest as f64 / 1e6 / SPEED + 22.0);
    while tokio::time::Instant::now() < until {
        let done = boards.iter().all(|(id, _, snap)| {
            let i: usize = id.trim_start_matches("line").parse().unwrap_or(0);
            let moves = &snap.borrow().moves;
            match runs[i].fault {
                Fault::Cuts => moves.len() == expected[i].len(),
                _ => *moves == expected[i],
            }
        });
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for c in cutters {
        let _ = c.within(60, "the line cuts to be done").await;
    }
    let events = stop_and_collect(daemon, collector, emulators)
        .await
        .unwrap_or_default();
    if std::env::var_os("FAULTS_KEEP").is_some() {
        println!("campaign folder kept: {}", dir.path().display());
    }
    let mut outcomes = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let id = format!("line{i}");
        let stats = {
            // Closing its channel ends the relay, which returns what it did.
            let (cuts, handle) = relays.remove(0);
            drop(cuts);
            match tokio::time::timeout(Duration::from_secs(5), handle).await {
                Ok(Ok(s)) => s,
                _ => RelayStats::default(),
            }
        };
        let file = dir.path().join(format!("live/round-1/game-{}.pgn", i + 1));
        let pgn = std::fs::read_to_string(&file).unwrap_or_default();
        let published = pgn_moves(&pgn).into_iter().next().unwrap_or_default();
        let marked = inferred_marks(&pgn);
        let result = pgn
            .lines()
            .find_map(|l| l.strip_prefix("[Result \"").and_then(|r| r.strip_suffix("\"]")))
            .unwrap_or("")
            .to_string();
        let (inferred, penalties, lost_track) = counts(&events, &id);
        // The recording replays to the game that was published.
        let recording = dir.path().join(format!("state/recordings/{id}.esl"));
        let log = eboard_bridge::log::read_log(&recording).unwrap();
        let rules = config(dir.path(), n).rules.core_config();
        let seen = seen_per_ply(&plies[i], &log, SPEED);
        let replay = eboard_bridge::output::replay::run(&log, &id, rules, None).unwrap();
        let replayed = replay
            .core
            .games()
            .last()
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .unwrap_or_default();
        // And `replay` of it with no options prints what was published.
        let as_published = common::replayed::replay_difference(&recording, &id, &events);
        outcomes.push(Outcome {
            name: format!("{} on {} (seed {})", run.fault.name(), run.game, run.seed),
            plies: run.moves.len(),
            published,
            marked,
            result,
            inferred,
            penalties,
            lost_track,
            replayed,
            as_published,
            seen,
            stats,
        });
    }
    if std::env::var_os("FAULTS_KEEP").is_some() {
        let _ = dir.keep();
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_faults_lose_no_move_and_invent_none() {
    let full = std::env::var("FAULTS").is_ok_and(|v| v == "full");
    let games = all_games();
    let mut runs = Vec::new();
    if full {
        for (gi, (name, start, moves)) in games.iter().enumerate() {
            for (fi, fault) in FAULTS.into_iter().enumerate() {
                runs.push(Run {
                    fault,
                    game: name.clone(),
                    start: start.clone(),
                    moves: moves.clone(),
                    seed: 1000 + (gi * FAULTS.len() + fi) as u64,
                });
            }
        }
    } else {
        // One game per fault kind, at most 60 plies each (80 with 20 cuts), all at
        // once.
        for (fi, fault) in FAULTS.into_iter().enumerate() {
            let (name, start, moves) = match fault {
                Fault::Cuts => games.iter().find(|(_, _, m)| m.len() >= 80).unwrap_or(&games[0]),
                _ => &games[(fi * 7) % games.len()],
            };
            let plies = if fault == Fault::Cuts { 80 } else { 60 };
            runs.push(Run {
                fault,
                game: name.clone(),
                start: start.clone(),
                moves: moves.iter().take(plies).copied().collect(),
                seed: 7 + fi as u64,
            });
        }
    }
    // FAULTS_SEED=N[,N...] runs only the runs with those seeds (to look into them).
    if let Ok(list) = std::env::var("FAULTS_SEED") {
        let seeds: Vec<u64> = list.split(',').filter_map(|s| s.trim().parse().ok()).collect();
        runs.retain(|r| seeds.contains(&r.seed));
    }
    // At most 16 boards at a time on this machine's two cores.
    let mut failures = Vec::new();
    let mut totals = (0usize, 0usize);
    while !runs.is_empty() {
        let batch: Vec<Run> = runs.drain(..runs.len().min(16)).collect();
        let outcomes = campaign(batch.iter().map(copy_run).collect()).await;
        totals.0 += outcomes.len();
        totals.1 += outcomes.iter().map(|o| o.plies).sum::<usize>();
        failures.extend(judge(&batch, &outcomes));
    }
    println!(
        "{} games, {} plies, {} failures",
        totals.0,
        totals.1,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn copy_run(r: &Run) -> Run {
    Run {
        fault: r.fault,
        game: r.game.clone(),
        start: r.start.clone(),
        moves: r.moves.clone(),
        seed: r.seed,
    }
}

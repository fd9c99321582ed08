//! The largest difference between two runs' final weights (their latest checkpoints), per
//! parameter and overall: to check that a resumed run ended where an uninterrupted one did.
//!
//! ```text
//! cargo run --release --example weights_diff -- runs/reference runs/resumed
//! ```
//!
//! Exit code 0 when both load and hold the same parameters, 2 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use tidemark::train::Checkpoint;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [a, b] = args.as_slice() else {
        eprintln!("usage: weights_diff RUN_DIR_A RUN_DIR_B");
        return ExitCode::from(2);
    };
    match diff(a, b) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn diff(a: &PathBuf, b: &PathBuf) -> Result<(), tidemark::Error> {
    let (wa, wb) = (
        Checkpoint::latest(a)?.weights()?,
        Checkpoint::latest(b)?.weights()?,
    );
    let mut overall = 0.0f32;
    for (name, x) in &wa {
        let Some(y) = wb.get(name).filter(|y| y.len() == x.len()) else {
            let message = format!("{name} is missing or shaped differently");
            return Err(tidemark::Error::checkpoint(b, message));
        };
        let max = x
            .iter()
            .zip(y)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        println!("{name:<40} {:>9} values  max |diff| {max:e}", x.len());
        overall = overall.max(max);
    }
    if let Some(extra) = wb.keys().find(|k| !wa.contains_key(*k)) {
        return Err(tidemark::Error::checkpoint(
            a,
            format!("{extra} is missing"),
        ));
    }
    println!("overall max |diff| {overall:e}");
    Ok(())
}

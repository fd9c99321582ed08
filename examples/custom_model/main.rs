//! An app of its own on tidemark: a model kind that tidemark has never seen (`sales`: its
//! model, dataset, batcher and loss in `task.rs`, its `[model]` keys in `kind.rs`), and every
//! `tidemark` command for it from this program's own binary: `train`, `sweep` (in parallel
//! under leases, pruned), `report`, `evaluate`, `compare`, `validate`, and `--resume`; and a
//! command of the program's own, `draw`, which writes the sales the kind trains on as a CSV.
//!
//!     cargo run --release --example custom_model -- train --config examples/custom_model/sales.toml
//!
//! `examples/custom_model/README.md` shows each command.

mod kind;
mod task;

use std::io::Write;

use tidemark::clap::{value_parser, Arg, ArgMatches, Command};

// Host memory accounting, as the `tidemark` binary has it: on flex the limit is measured in it.
#[global_allocator]
static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();

fn main() {
    let draw = Command::new("draw")
        .about("Write the sales the `sales` kind draws, as a CSV with evaluate's columns")
        .arg(
            Arg::new("samples")
                .long("samples")
                .default_value("12")
                .value_parser(value_parser!(usize)),
        )
        .arg(
            Arg::new("seed")
                .long("seed")
                .default_value("7")
                .value_parser(value_parser!(u64)),
        )
        .arg(
            Arg::new("out")
                .long("out")
                .required(true)
                .value_name("FILE"),
        );
    let app = tidemark::App::new()
        .kind("sales", kind::SalesKind)
        .about("Sales forecasts: tidemark's commands over the `sales` model kind")
        .command(draw, write_sales);
    std::process::exit(app.run());
}

/// `draw`: `--samples` sales from `--seed`, in `--out`.
fn write_sales(args: &ArgMatches) -> Result<(), tidemark::Error> {
    let (samples, seed) = (
        args.get_one::<usize>("samples"),
        args.get_one::<u64>("seed"),
    );
    let out: &String = args.get_one("out").expect("required");
    let sales = task::sales(*samples.expect("defaulted"), *seed.expect("defaulted"));
    let mut text = String::from("f0,f1,f2,f3,f4,f5,f6,f7,store,amount\n");
    for sale in &sales {
        let features: Vec<String> = sale.features.iter().map(|x| format!("{x:.3}")).collect();
        text.push_str(&format!(
            "{},{},{:.3}\n",
            features.join(","),
            sale.store,
            sale.amount
        ));
    }
    let path = std::path::Path::new(out);
    let written = std::fs::File::create(path).and_then(|mut f| f.write_all(text.as_bytes()));
    written.map_err(|e| tidemark::Error::io(path, e))?;
    println!("draw: {} sales in {out}", sales.len());
    Ok(())
}

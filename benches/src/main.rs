//! The `bareverbs` command-line tool.
use clap::Parser;

/// bareverbs: mlx5 queue sizing, codec and performance tools.
#[derive(Parser)]
#[command(name = "bareverbs", version, about)]
enum Cli {
    /// Print the tool version and exit.
    Version,
    /// Exact mlx5 queue memory per QP and per node (FACTS §3).
    Budget(bareverbs_bench::budget::BudgetArgs),
    /// Measure the data path (post/poll on memory-backed queues).
    #[command(subcommand)]
    Perf(PerfCmd),
}

/// `bareverbs perf` subcommands.
#[derive(clap::Subcommand)]
enum PerfCmd {
    /// CPU cost of posting WRs with the full doorbell sequence.
    Post {
        #[command(flatten)]
        args: bareverbs_bench::perf::post::PostArgs,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Version => println!("bareverbs {}", env!("CARGO_PKG_VERSION")),
        Cli::Budget(args) => std::process::exit(bareverbs_bench::budget::run(&args)?),
        Cli::Perf(PerfCmd::Post { args, json }) => {
            let stats = bareverbs_bench::perf::post::PostBench::new(args)?.run();
            if json {
                println!("{}", serde_json::to_string(&stats)?);
            } else {
                println!(
                    "post {:?} sge={} inline={:?} batch={} signal_every={}: {:.2} ns/WR over {} WRs ({:.2} WQEBBs/WR, {} doorbells)",
                    args.opcode, args.sge, args.inline, args.batch, args.signal_every,
                    stats.ns_per_op, stats.ops, stats.wqebbs_per_wr, stats.doorbells
                );
            }
        }
    }
    Ok(())
}

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
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Version => println!("bareverbs {}", env!("CARGO_PKG_VERSION")),
        Cli::Budget(args) => std::process::exit(bareverbs_bench::budget::run(&args)?),
    }
    Ok(())
}

//! The `bareverbs` command-line tool.
use clap::Parser;

/// bareverbs: mlx5 queue sizing, codec and performance tools.
#[derive(Parser)]
#[command(name = "bareverbs", version, about)]
enum Cli {
    /// Print the tool version and exit.
    Version,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Version => println!("bareverbs {}", env!("CARGO_PKG_VERSION")),
    }
    Ok(())
}

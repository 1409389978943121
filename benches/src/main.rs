//! The `bareverbs` command-line tool.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// bareverbs: mlx5 queue sizing, codec and performance tools.
#[derive(Parser)]
#[command(name = "bareverbs", version, about)]
enum Cli {
    /// Print the tool version and exit.
    Version,
    /// Replay ground-truth vector files; exit status 1 if any case fails.
    Conform {
        /// Vector files (wqe, recv, cqe or sizing; kind detected from the header).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Decode WQE or CQE bytes given as hex.
    #[command(subcommand)]
    Decode(Decode),
}

#[derive(Subcommand)]
enum Decode {
    /// Decode a send WQE.
    Wqe {
        /// Hex bytes (joined from all arguments; whitespace allowed).
        #[arg(required = true)]
        hex: Vec<String>,
        /// QP type: rc, uc, ud or raw.
        #[arg(long, value_parser = ["rc", "uc", "ud", "raw"])]
        qp_type: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Decode one or more CQEs.
    Cqe {
        /// Hex bytes (joined from all arguments; whitespace allowed).
        #[arg(required = true)]
        hex: Vec<String>,
        /// Consumer index (for the owner-bit check).
        #[arg(long)]
        ci: Option<u32>,
        /// Number of CQ entries (for the owner-bit check).
        #[arg(long)]
        ncqe: Option<u32>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli {
        Cli::Version => println!("bareverbs {}", env!("CARGO_PKG_VERSION")),
        Cli::Conform { files } => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let (_, failed) = bareverbs_bench::conform::run(&files, &mut out)?;
            if failed > 0 {
                return Ok(ExitCode::from(1));
            }
        }
        Cli::Decode(Decode::Wqe { hex, qp_type, json }) => {
            let bytes = bareverbs_bench::decode::parse_hex(&hex.join(" "))?;
            let s = bareverbs_bench::decode::wqe::decode_wqe(&bytes, qp_type.as_deref(), json)?;
            println!("{s}");
        }
        Cli::Decode(Decode::Cqe {
            hex,
            ci,
            ncqe,
            json,
        }) => {
            let bytes = bareverbs_bench::decode::parse_hex(&hex.join(" "))?;
            let s = bareverbs_bench::decode::cqe::decode_cqe(&bytes, json, ci, ncqe)?;
            println!("{s}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

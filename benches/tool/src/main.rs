//! The `bareverbs` command-line tool.
// Output goes through `bareverbs_tool::output` (a closed stdout exits 0).
#![deny(clippy::print_stdout, clippy::print_stderr)]
use std::path::PathBuf;
use std::process::ExitCode;

use bareverbs_tool::args::{is_usage, UsageExt};
use bareverbs_tool::envelope::{envelope, envelope_of};
use bareverbs_tool::{eoutln, out, outln};
use clap::{CommandFactory, Parser, Subcommand};

// clap takes the doc comments below as help text, so they are plain text
// (no rustdoc links); the tests at the end check every command's help.
// The about line names every subcommand (not the package description).
/// bareverbs: mlx5 queue sizing, codec and performance tools (conform,
/// decode, devinfo, selftest, budget, perf, pingpong, sweep, completions,
/// version).
#[derive(Parser)]
#[command(name = "bareverbs", version)]
enum Cli {
    /// Print the tool version and exit.
    Version,
    /// Replay ground-truth vector files; exit status 1 if any case fails.
    Conform {
        /// Vector files (wqe, recv, cqe or sizing; kind detected from the
        /// header). None: every .txt and .csv file of the bundled vectors,
        /// or of the directory BAREVERBS_VECTORS names.
        files: Vec<PathBuf>,
    },
    /// Decode WQE or CQE bytes given as hex.
    #[command(subcommand)]
    Decode(Decode),
    /// Device attributes as `ibv_devinfo` prints them (-v, -d, -i, -l), through the command interface.
    Devinfo(bareverbs_tool::devinfo::DevinfoArgs),
    /// Loopback self-test: WRITE, SEND/RECV and READ between two RC QPs
    /// looped back on port 1, every byte verified.
    Selftest(bareverbs_tool::selftest::SelftestArgs),
    /// Exact mlx5 queue memory per QP and per node (hardware reference §3).
    Budget(bareverbs_tool::budget::BudgetArgs),
    /// Measure the data path (post/poll on memory-backed queues).
    #[command(subcommand)]
    Perf(PerfCmd),
    /// `ibv_rc_pingpong` between two hosts: the same flags, exchange and
    /// report (a stock `ibv_rc_pingpong` can be the other side).
    Pingpong(bareverbs_tool::pingpong::PingpongArgs),
    /// max_send_wr x max_send_sge design space: sizing, posted WQE, CPU and NIC cost.
    Sweep(bareverbs_tool::sweep::SweepArgs),
    /// Print a completion script for SHELL on stdout (e.g. `bareverbs
    /// completions bash > /etc/bash_completion.d/bareverbs`).
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
}

/// `bareverbs perf` subcommands.
#[derive(Subcommand)]
enum PerfCmd {
    /// CPU cost of polling CQEs (wr_id recovery, doorbell record update).
    Poll {
        #[command(flatten)]
        args: bareverbs_tool::perf::poll::PollArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// CPU cost of posting WRs with the full doorbell sequence.
    Post {
        #[command(flatten)]
        args: bareverbs_tool::perf::post::PostArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// CPU cost of posting receive WRs (RQ or SRQ) with the doorbell record.
    PostRecv {
        #[command(flatten)]
        args: bareverbs_tool::perf::recv::RecvArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// ib_write_lat look-alike.
    WriteLat(bareverbs_tool::perf::run::PerfArgs),
    /// ib_write_bw look-alike.
    WriteBw(bareverbs_tool::perf::run::PerfArgs),
    /// ib_send_lat look-alike.
    SendLat(bareverbs_tool::perf::run::PerfArgs),
    /// ib_send_bw look-alike.
    SendBw(bareverbs_tool::perf::run::PerfArgs),
    /// ib_read_lat look-alike.
    ReadLat(bareverbs_tool::perf::run::PerfArgs),
    /// ib_read_bw look-alike.
    ReadBw(bareverbs_tool::perf::run::PerfArgs),
    /// ib_atomic_lat look-alike.
    AtomicLat(bareverbs_tool::perf::run::PerfArgs),
    /// Rust vs C (mlx5dv.h) post loop, interleaved.
    CompareC {
        /// Interleaved rounds per case.
        #[arg(long, default_value_t = 20)]
        rounds: u32,
        /// WRs per round.
        #[arg(long, default_value_t = 200_000)]
        per_round: u64,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
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
        /// JSON on stdout instead of text.
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
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // Queue storage is sized at run time from each QP's geometry, so the
    // work runs on the main thread's ordinary stack.
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            // One line: the error and its causes, joined by ": ".
            let msg = format!("{e:#}").replace('\n', " ");
            eoutln!("error: {msg}");
            // Bad user input exits 2 (as clap's usage errors do); run-time
            // failures exit 1.
            ExitCode::from(if is_usage(&e) { 2 } else { 1 })
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli {
        Cli::Version => outln!("bareverbs {}", env!("CARGO_PKG_VERSION")),
        Cli::Conform { files } => return conform(&files),
        Cli::Decode(d) => decode(d)?,
        Cli::Devinfo(a) => devinfo(a)?,
        Cli::Selftest(a) => selftest(a)?,
        Cli::Pingpong(a) => return bareverbs_tool::pingpong::run(&a),
        Cli::Budget(args) => {
            // budget only computes: every error is about its input.
            let code = bareverbs_tool::budget::run(&args).usage()?;
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
        Cli::Perf(PerfCmd::Poll { args, json }) => perf_poll(args, json)?,
        Cli::Perf(PerfCmd::Post { args, json }) if args.c_loop => {
            bareverbs_tool::perf::c_loop::post(args, json)?
        }
        Cli::Perf(PerfCmd::Post { args, json }) => perf_post(args, json)?,
        Cli::Perf(PerfCmd::PostRecv { args, json }) => perf_post_recv(args, json)?,
        Cli::Perf(cmd) => return bareverbs_tool::perf::cli::run(cmd.into()),
        Cli::Sweep(args) => bareverbs_tool::sweep::run(&args)?,
        Cli::Completions { shell } => completions(shell),
    }
    Ok(ExitCode::SUCCESS)
}

/// `bareverbs conform FILE…`: exit status 1 if any case fails.
fn conform(files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let bundled;
    let files = if files.is_empty() {
        bundled = vector_files(&bareverbs_tool::vectors::vectors_dir()).usage()?;
        &bundled[..]
    } else {
        files
    };
    let mut out = bareverbs_tool::output::stdout();
    // An unreadable file is bad input (exit 2), not a failed case.
    for f in files {
        std::fs::File::open(f)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", f.display()))
            .usage()?;
    }
    // Errors here are malformed vector files.
    let (_, failed) = bareverbs_tool::conform::run(files, &mut out).usage()?;
    if failed > 0 {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The vector files (`.txt`, `.csv`) of `dir`, in name order.
fn vector_files(dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        // An installed tool names the vectors in the package sources it was
        // built from; cargo may have removed those since (its cache clean-up).
        let hint = if std::env::var_os("BAREVERBS_VECTORS").is_some() {
            "BAREVERBS_VECTORS names it"
        } else {
            "the vectors bundled with bareverbs-conformance; give vector files, or a \
             directory of them in BAREVERBS_VECTORS"
        };
        anyhow::anyhow!("cannot read {} ({hint}): {e}", dir.display())
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let ext = path.extension().and_then(|e| e.to_str());
        if matches!(ext, Some("txt" | "csv")) {
            files.push(path);
        }
    }
    if files.is_empty() {
        anyhow::bail!("no vector files (.txt, .csv) in {}", dir.display());
    }
    files.sort();
    Ok(files)
}

/// `bareverbs completions SHELL`: the completion script on stdout.
fn completions(shell: clap_complete::Shell) {
    let mut out = bareverbs_tool::output::stdout();
    clap_complete::generate(shell, &mut Cli::command(), "bareverbs", &mut out);
}

/// `bareverbs decode wqe|cqe HEX`.
fn decode(d: Decode) -> anyhow::Result<()> {
    match d {
        Decode::Wqe { hex, qp_type, json } => {
            let bytes = bareverbs_tool::decode::parse_hex(&hex.join(" ")).usage()?;
            let s = bareverbs_tool::decode::wqe::decode_wqe(&bytes, qp_type.as_deref(), json)
                .usage()?;
            outln!("{s}");
        }
        Decode::Cqe {
            hex,
            ci,
            ncqe,
            json,
        } => {
            let bytes = bareverbs_tool::decode::parse_hex(&hex.join(" ")).usage()?;
            let s = bareverbs_tool::decode::cqe::decode_cqe(&bytes, json, ci, ncqe).usage()?;
            outln!("{s}");
        }
    }
    Ok(())
}

/// `bareverbs devinfo`: `-l` lists the devices; otherwise one device's
/// attributes (and with `--selftest` the loopback self-test after them).
fn devinfo(a: bareverbs_tool::devinfo::DevinfoArgs) -> anyhow::Result<()> {
    use bareverbs_tool::devinfo as di;
    if a.list {
        let names = di::list_devices();
        if a.json {
            let v = envelope("devinfo", serde_json::json!({ "devices": names }));
            outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            out!("{}", di::list_text(&names));
        }
        return Ok(());
    }
    let dev = a.device()?;
    let mut d = di::query_device(&dev)?;
    di::select_port(&mut d, &dev, a.port)?;
    let opts = bareverbs::selftest::SelfTestOptions {
        blueflame: a.blueflame,
        ..Default::default()
    };
    let name = dev.name();
    let st = if a.selftest {
        Some(bareverbs_tool::selftest::run(&name, opts)?)
    } else {
        None
    };
    if a.json {
        let mut v = envelope("devinfo", di::to_json(&d, &dev));
        if let Some(r) = &st {
            v["selftest"] = bareverbs_tool::selftest::to_json(r, &name, &opts);
        }
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{}", di::to_text(&d, &dev, a.verbose));
        if let Some(r) = &st {
            out!("{}", bareverbs_tool::selftest::to_text(r, &name, &opts));
        }
    }
    Ok(())
}

/// `bareverbs selftest`: the loopback self-test alone.
fn selftest(a: bareverbs_tool::selftest::SelftestArgs) -> anyhow::Result<()> {
    let opts = bareverbs::selftest::SelfTestOptions {
        blueflame: a.blueflame,
        ..Default::default()
    };
    let name = bareverbs_tool::device_arg::parse_device(&a.device)?.name();
    let r = bareverbs_tool::selftest::run(&name, opts)?;
    if a.json {
        let v = envelope(
            "selftest",
            bareverbs_tool::selftest::to_json(&r, &name, &opts),
        );
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{}", bareverbs_tool::selftest::to_text(&r, &name, &opts));
    }
    Ok(())
}

/// `bareverbs perf poll`.
fn perf_poll(args: bareverbs_tool::perf::poll::PollArgs, json: bool) -> anyhow::Result<()> {
    let stats = bareverbs_tool::perf::poll::PollBench::new(args)?.run();
    if json {
        outln!("{}", envelope_of("perf poll", &stats)?);
    } else {
        outln!(
            "poll batch={} path={}: {:.2} ns/CQE over {} CQEs",
            args.batch,
            if args.full { "full" } else { "lean" },
            stats.ns_per_op,
            stats.ops
        );
    }
    Ok(())
}

/// `bareverbs perf post` (the Rust post path; `--c-loop` is
/// [`bareverbs_tool::perf::c_loop::post`]).
fn perf_post(args: bareverbs_tool::perf::post::PostArgs, json: bool) -> anyhow::Result<()> {
    let stats = bareverbs_tool::perf::post::PostBench::new(args)?.run();
    if json {
        outln!("{}", envelope_of("perf post", &stats)?);
    } else {
        outln!(
            "post {:?} sge={} inline={:?} batch={} signal_every={}: {:.2} ns/WR over {} WRs ({:.2} WQEBBs/WR, {} doorbells)",
            args.opcode,
            args.sge,
            args.inline,
            args.batch,
            args.signal_every,
            stats.ns_per_op,
            stats.ops,
            stats.wqebbs_per_wr,
            stats.doorbells
        );
    }
    Ok(())
}

/// `bareverbs perf post-recv`.
fn perf_post_recv(args: bareverbs_tool::perf::recv::RecvArgs, json: bool) -> anyhow::Result<()> {
    let stats = bareverbs_tool::perf::recv::RecvBench::new(args)?.run()?;
    if json {
        outln!("{}", envelope_of("perf post-recv", &stats)?);
    } else {
        outln!(
            "post-recv {:?} sge={} batch={}: {:.2} ns/WR over {} WRs (max_gs {}, {} doorbell records)",
            args.queue,
            args.sge,
            args.batch,
            stats.ns_per_op,
            stats.ops,
            stats.max_gs,
            stats.doorbells
        );
    }
    Ok(())
}

impl From<PerfCmd> for bareverbs_tool::perf::cli::Cmd {
    fn from(c: PerfCmd) -> Self {
        use bareverbs_tool::perf::cli::Cmd;
        use bareverbs_tool::perf::run::PerfTest as T;
        match c {
            PerfCmd::Post { .. } | PerfCmd::Poll { .. } | PerfCmd::PostRecv { .. } => {
                unreachable!("handled above")
            }
            PerfCmd::WriteLat(a) => Cmd::Test(T::WriteLat, Box::new(a)),
            PerfCmd::WriteBw(a) => Cmd::Test(T::WriteBw, Box::new(a)),
            PerfCmd::SendLat(a) => Cmd::Test(T::SendLat, Box::new(a)),
            PerfCmd::SendBw(a) => Cmd::Test(T::SendBw, Box::new(a)),
            PerfCmd::ReadLat(a) => Cmd::Test(T::ReadLat, Box::new(a)),
            PerfCmd::ReadBw(a) => Cmd::Test(T::ReadBw, Box::new(a)),
            PerfCmd::AtomicLat(a) => Cmd::Test(T::AtomicLat, Box::new(a)),
            PerfCmd::CompareC {
                rounds,
                per_round,
                json,
            } => Cmd::CompareC {
                rounds,
                per_round,
                json,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// `cmd` and its subcommands, recursively: each one's path (`bareverbs
    /// perf post`) with its `-h` and `--help` text.
    fn helps(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        out.push((format!("{path} -h"), cmd.render_help().to_string()));
        out.push((format!("{path} --help"), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            let p = format!("{path} {}", sub.get_name());
            helps(sub, &p, out);
        }
    }

    /// The built command tree (with clap's `help` subcommands).
    fn cli() -> clap::Command {
        let mut cmd = Cli::command();
        cmd.build();
        cmd
    }

    /// Every subcommand path below `cmd`, e.g. `perf write-lat` (not
    /// clap's `help`).
    fn paths(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let p = format!("{prefix}{}", sub.get_name());
            out.push(p.clone());
            paths(sub, &format!("{p} "), out);
        }
    }

    #[test]
    fn help_text_has_no_rustdoc_links() {
        let mut all = Vec::new();
        helps(&mut cli(), "bareverbs", &mut all);
        // bareverbs, its subcommands, perf's and decode's: at least 20.
        assert!(all.len() > 40, "{}", all.len());
        for (what, text) in &all {
            for bad in ["](", "[`", "[ref §", "bareverbs::"] {
                assert!(!text.contains(bad), "{what}: {bad:?} in\n{text}");
            }
        }
    }

    #[test]
    fn about_line_names_every_subcommand() {
        let cmd = cli();
        let about = cmd.get_about().expect("an about line").to_string();
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            assert!(
                about.contains(sub.get_name()),
                "about line lacks {}: {about}",
                sub.get_name()
            );
        }
    }

    #[test]
    fn bash_completions_name_every_subcommand() {
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "bareverbs",
            &mut script,
        );
        let script = String::from_utf8(script).unwrap();
        let mut all = Vec::new();
        paths(&cli(), "", &mut all);
        assert!(all.iter().any(|p| p == "perf write-lat"), "{all:?}");
        assert!(all.iter().any(|p| p == "completions"), "{all:?}");
        for path in all {
            // A case label of the script's word walk: `bareverbs,perf)`,
            // `bareverbs__subcmd__perf,write-lat)`.
            let label = format!(",{})", path.rsplit(' ').next().unwrap());
            assert!(script.contains(&label), "{path} not in the bash script");
        }
    }
}

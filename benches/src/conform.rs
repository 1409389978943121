//! `bareverbs conform FILE…`: replays ground-truth vector files through
//! bareverbs and reports one line per case.

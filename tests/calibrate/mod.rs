//! Calibration against human labels: the statistics against outside
//! oracles, `calibrate` with a scripted judge, the `label` session in a
//! pseudo-terminal.

mod cli;
mod html;
mod label;
mod oracle;

//! `tokio-async PID` and `tokio-async BINARY CORE`: see `tokio_async_core::cli`.

fn main() {
    std::process::exit(tokio_async_core::cli::main());
}

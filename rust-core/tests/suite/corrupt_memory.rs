//! Decoding over garbage: every coroutine type of the fixtures, and every library future
//! type of the service fixture (searched structurally), laid over deterministic
//! pseudo-random bytes, must decode to a bounded tree or errors, never a panic or a hang.

use crate::common;

use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::{Error, Result};
use tokio_async_core::future::FutureDecoder;
use tokio_async_core::memory::Memory;
use tokio_async_core::model::FutureNode;
use tokio_async_core::tokio::tasks::TaskReader;
use tokio_async_core::value::Target;

/// 1 MiB of xorshift bytes at a fixed base; pointers into it are followed, others fail.
struct NoiseMemory {
    base: u64,
    bytes: Vec<u8>,
}

impl NoiseMemory {
    fn new(seed: u64) -> Self {
        let mut state = seed | 1;
        let mut bytes = vec![0u8; 1 << 20];
        for chunk in bytes.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Some words point back into the buffer, so walks go somewhere.
            let word = if state.is_multiple_of(4) {
                0x1000_0000 + (state >> 8) % (1 << 20)
            } else {
                state
            };
            chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
        }
        NoiseMemory {
            base: 0x1000_0000,
            bytes,
        }
    }
}

impl Memory for NoiseMemory {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let start = address
            .checked_sub(self.base)
            .ok_or_else(|| Error::memory(address, buf.len()))? as usize;
        let slice = self
            .bytes
            .get(start..start + buf.len())
            .ok_or_else(|| Error::memory(address, buf.len()))?;
        buf.copy_from_slice(slice);
        Ok(())
    }
}

fn count(node: &FutureNode) -> usize {
    1 + node.children.iter().map(count).sum::<usize>()
}

#[test]
fn garbage_memory_gives_errors_not_panics() {
    for program in ["tokio-app", "waits-app"] {
        let debug = DebugInfo::load(&common::fixture(program, "dev")).unwrap();
        let envs: Vec<String> = debug
            .type_names_with_prefix("")
            .into_iter()
            .filter(|name| name.contains("{async_fn_env#") || name.contains("{async_block_env#"))
            .filter(|name| {
                !name.contains("::Suspend")
                    && !name.ends_with("Unresumed")
                    && !name.ends_with("Returned")
                    && !name.ends_with("Panicked")
            })
            .collect();
        assert!(
            envs.len() > 50,
            "{program}: only {} coroutine types",
            envs.len()
        );
        for seed in 1..4u64 {
            let memory = NoiseMemory::new(seed);
            let target = Target::new(&debug, &memory, 0);
            let tasks = TaskReader::new(&target).unwrap();
            let decoder = FutureDecoder::new(&target).with_tasks(&tasks);
            for (i, env) in envs.iter().enumerate() {
                let ty = debug.type_by_name(env, None).unwrap();
                let address =
                    memory.base + ((i as u64 * 4099 + seed * 977) % (1 << 19)) * 8 % (1 << 20);
                let node = decoder.decode(ty, address);
                assert!(count(&node) < 200_000, "{env}: tree too large");
            }
        }
    }
}

#[test]
fn garbage_under_library_futures_gives_errors_not_panics() {
    // Types no decoder knows are searched through their fields, enum variants and Boxes;
    // over noise, Boxes point anywhere and tags take any value.
    let debug = DebugInfo::load(&common::fixture("services-app", "dev")).unwrap();
    let memory = NoiseMemory::new(7);
    let target = Target::new(&debug, &memory, 0);
    let tasks = TaskReader::new(&target).unwrap();
    let decoder = FutureDecoder::new(&target).with_tasks(&tasks);
    let polled = tokio_async_core::future::polled_types(&debug);
    let futures: Vec<String> = debug
        .type_names_with_prefix("")
        .into_iter()
        .filter(|name| {
            [
                "hyper::",
                "hyper_util::",
                "axum::",
                "tower::",
                "tonic::",
                "reqwest::",
                "futures_util::",
            ]
            .iter()
            .any(|krate| name.starts_with(krate))
        })
        .filter(|name| polled.contains(&tokio_async_core::names::strip_last_generics(name)))
        .collect();
    assert!(
        futures.len() > 100,
        "only {} library future types",
        futures.len()
    );
    for (i, name) in futures.iter().enumerate() {
        let ty = debug.type_by_name(name, None).unwrap();
        let address = memory.base + ((i as u64 * 4099) % (1 << 19)) * 8 % (1 << 20);
        let node = decoder.decode(ty, address);
        assert!(count(&node) < 200_000, "{name}: tree too large");
    }
}

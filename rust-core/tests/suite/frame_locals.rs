//! The `block_on` local the core finds from DWARF and the frame's stack pointer is the one
//! the debugger read, on real stops (the recorded images of `fuzz/images`, whose requests
//! carry the locals GDB read in every frame named like `block_on`).

use crate::common;
use crate::fuzzing;

use tokio_async_core::block_on::find_block_on_frame;
use tokio_async_core::dwarf::{InlinedScope, LocalValue, PhysicalFrame};
use tokio_async_core::memory::MemoryExt;
use tokio_async_core::stack::resolve_frames;

use fuzzing::{Harness, PatchedMemory, FULL};

#[test]
fn the_block_on_local_from_dwarf_is_the_one_the_debugger_read() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let mut compared = Vec::new();
    for image in harness.images.iter().filter(|image| image.profile == "dev") {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let request = image.request(FULL);
        for thread in &request.threads {
            let frames = resolve_frames(debug, image.load_bias, &thread.frames);
            let Some((index, local)) = find_block_on_frame(&frames) else {
                continue;
            };
            let input = frames[index].input;
            let Some(expected) = input.locals.get(local).and_then(|bytes| bytes.pointer()) else {
                continue;
            };
            if input.inlined {
                continue;
            }
            // The physical frame's pc: its group's innermost (GDB gives them all the same).
            let group_start = frames[..index]
                .iter()
                .rposition(|frame| !frame.input.inlined)
                .map_or(0, |before| before + 1);
            let pc = frames[group_start].input.pc - image.load_bias - u64::from(group_start > 0);
            let frame = PhysicalFrame {
                pc,
                sp: input.sp.expect("block_on frames have a stack pointer"),
                fp: input.fp,
            };
            let address = debug
                .local_address(frame, local, &memory, image.load_bias)
                .unwrap_or_else(|error| panic!("{} thread {}: {error}", image.name, thread.tid))
                .unwrap_or_else(|| {
                    panic!(
                        "{} thread {}: no DWARF location for `{local}`",
                        image.name, thread.tid
                    )
                });
            let value = memory
                .read_u64(address)
                .unwrap_or_else(|error| panic!("{}: {error}", image.name));
            assert_eq!(
                value, expected,
                "{} thread {}: `{local}`",
                image.name, thread.tid
            );
            compared.push(format!("{} {}", image.name, thread.tid));
        }
    }
    // One per dev stop, two in two-runtimes. A stop recorded before its fixture last
    // changed has pcs that no longer name its functions, and drops out.
    assert!(
        compared.len() >= 8,
        "compared only {compared:?}: record the stops of changed fixtures again (python3 tools/fuzz_images.py)"
    );
}

/// In an inlined `block_on` frame (release builds), where the glue asks the debugger for the
/// local, `local_value_in` (the `tokio-async` executable's way) reads what GDB read: here
/// from the stack and frame pointers the stop recorded, in the inlined scope's own DWARF.
#[test]
fn the_inlined_block_on_local_from_dwarf_is_the_one_the_debugger_read() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let mut compared = Vec::new();
    for image in harness
        .images
        .iter()
        .filter(|image| image.profile == "release")
    {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let request = image.request(FULL);
        for thread in &request.threads {
            let frames = resolve_frames(debug, image.load_bias, &thread.frames);
            let Some((index, local)) = find_block_on_frame(&frames) else {
                continue;
            };
            let input = frames[index].input;
            let Some(expected) = input.locals.get(local).and_then(|bytes| bytes.pointer()) else {
                continue;
            };
            if !input.inlined {
                continue;
            }
            let group_start = frames[..index]
                .iter()
                .rposition(|frame| !frame.input.inlined)
                .map_or(0, |before| before + 1);
            let pc = frames[group_start].input.pc - image.load_bias - u64::from(group_start > 0);
            let function = frames[index].function.as_ref().expect("resolved");
            let chain = debug.functions_at(pc).unwrap();
            let mut registers = [None; 17];
            registers[7] = input.sp;
            registers[6] = input.fp;
            let value = debug
                .local_value_in(
                    InlinedScope {
                        scope: function.code,
                        subprogram: chain[0].code,
                        pc,
                    },
                    local,
                    &registers,
                    &memory,
                    image.load_bias,
                )
                .unwrap_or_else(|error| panic!("{} thread {}: {error}", image.name, thread.tid));
            assert_eq!(
                value,
                LocalValue::Value(expected),
                "{} thread {}: `{local}`",
                image.name,
                thread.tid
            );
            compared.push(format!("{} {}", image.name, thread.tid));
        }
    }
    // tokio-app's release current_thread stop keeps `future` in an inlined frame.
    assert!(
        !compared.is_empty(),
        "no inlined block_on local was compared"
    );
}

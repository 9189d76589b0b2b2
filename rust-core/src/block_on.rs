//! The future a thread blocks on (`Runtime::block_on`): its type from the `block_on`
//! function's template parameter, its address from the function's `Pin<&mut F>` local or,
//! when optimized builds keep no location for that local, from a search of the stack.

use crate::arch::RETURN_ADDRESS_SIZE;
use crate::dwarf::{DieRef, PhysicalFrame, TypeTag};
use crate::future::FutureDecoder;
use crate::layouts::{rust, tokio as runtime};
use crate::memory::MemoryExt;
use crate::model::{CoroutineState, FutureNode};
use crate::stack::ResolvedFrame;
use crate::std_values;
use crate::tokio::sources::TaskSource;
use crate::tokio::tasks::TaskReader;
use crate::value::{Target, Value};

/// The stack searched for a block_on future is at most this long: from the block_on frame
/// out to the thread's outermost frame, which for a main thread is a few KiB plus the
/// futures themselves.
const MAX_SEARCHED_STACK: u64 = 4 << 20;
/// Candidates decoded in full, after the cheap state check: bounds the search's work.
const MAX_CANDIDATES: usize = 1024;

/// How deep, and over how many values, a candidate's contents are checked.
const MAX_PLAUSIBILITY_DEPTH: usize = 8;
const MAX_PLAUSIBILITY_VALUES: usize = 512;
/// Pointers below this are taken for `NonNull::dangling()` (an alignment), not addresses.
const DANGLING_LIMIT: u64 = 0x1000;

/// The innermost frame that polls a `block_on` future (its index in `frames`), with the
/// local that holds it.
pub fn find_block_on_frame(frames: &[ResolvedFrame<'_>]) -> Option<(usize, &'static str)> {
    frames.iter().enumerate().find_map(|(index, frame)| {
        let path = frame.path_without_generics()?;
        runtime::BLOCK_ON_FRAMES
            .iter()
            .find(|(function, _)| *function == path)
            .map(|(_, local)| (index, *local))
    })
}

/// Frames the glue must read locals of, for `block_on` futures: (function path, local).
pub fn block_on_frames() -> &'static [(&'static str, &'static str)] {
    runtime::BLOCK_ON_FRAMES
}

/// A block_on future found, and how many identical copies of it the stack holds where it
/// could not be told which one `block_on` has pinned (1 when it could).
pub struct BlockOnFuture {
    pub node: FutureNode,
    pub copies: usize,
}

impl BlockOnFuture {
    fn one(node: FutureNode) -> BlockOnFuture {
        BlockOnFuture { node, copies: 1 }
    }
}

/// The future the `block_on` frame at `frames[index]` polls, decoded; or one line saying
/// why it cannot be found.
pub fn block_on_future(
    target: &Target<'_>,
    decoder: &FutureDecoder<'_>,
    frames: &[ResolvedFrame<'_>],
    (index, local): (usize, &str),
) -> Result<BlockOnFuture, String> {
    let frame = &frames[index];
    let function = frame
        .function
        .as_ref()
        .expect("block_on frames are resolved");
    let params = target
        .debug
        .function_template_params(function.die)
        .map_err(|error| error.message())?;
    let future_type = params
        .iter()
        .find(|(name, _)| name == runtime::BLOCK_ON_FUTURE_PARAM)
        .map(|(_, die)| *die)
        .ok_or_else(|| format!("cannot tell the future type of `{}`", function.path))?;
    // The local is a `Pin<&mut F>` (1.54's `CoreGuard::block_on`, `CachedParkThread`), or
    // `F` itself, which is then a `Pin<&mut X>` (`CoreGuard::block_on` before 1.54).
    let type_name = |die| {
        target
            .debug
            .type_info(die)
            .map(|info| info.name.clone())
            .ok()
    };
    let by_value = match target.debug.parameter_type(function.code, local) {
        Some(local_type) => type_name(local_type) == type_name(future_type),
        None => function.path.starts_with(runtime::BLOCK_ON_BY_VALUE_FRAME),
    };
    let future_type = match by_value {
        true => unpinned(target, future_type),
        false => future_type,
    };
    if let Some(local_set) = local_set_type(target, future_type) {
        return block_on_local_set(
            target,
            decoder,
            frames,
            (index, local),
            future_type,
            local_set,
        );
    }
    match local_pointer(target, frames, index, local) {
        // Optimized code can leave a debugger a stale value for the local (LLDB reads one
        // where GDB says "optimized out"): a tree that is not a consistent suspension sends
        // us to the stack, and back to the local if the stack has nothing better.
        Ok(address) => {
            let from_local = scratch_decoder(decoder).decode(future_type, address);
            if is_consistent_suspension(&from_local) {
                return Ok(BlockOnFuture::one(decoder.decode(future_type, address)));
            }
            match search_stack(target, decoder, frames, index, future_type) {
                Ok(found) => Ok(found.decode(decoder, future_type)),
                // Not suspended (its first poll is running, say) but readable: as it is.
                Err(_) if from_local.error().is_none() => {
                    Ok(BlockOnFuture::one(decoder.decode(future_type, address)))
                }
                Err(search) => Err(format!(
                    "cannot read the block_on future: `{local}` holds {address:#x}, where no {} is, and {search}",
                    from_local.type_name()
                )),
            }
        }
        Err(why) => search_stack(target, decoder, frames, index, future_type)
            .map(|found| found.decode(decoder, future_type))
            .map_err(|search| format!("cannot read the block_on future: {why}, and {search}")),
    }
}

/// A LocalSet the thread blocks on (`rt.block_on(local)`, or a `Pin<&mut LocalSet>`): where
/// the local points, if a live LocalSet is there, else the innermost one on the stack.
fn block_on_local_set(
    target: &Target<'_>,
    decoder: &FutureDecoder<'_>,
    frames: &[ResolvedFrame<'_>],
    (index, local): (usize, &str),
    future_type: DieRef,
    local_set: DieRef,
) -> Result<BlockOnFuture, String> {
    let tasks = TaskReader::new(target).map_err(|error| error.message())?;
    let why = match local_pointer(target, frames, index, local) {
        Ok(address) => {
            // The local points to the future: the LocalSet, or the `Pin` that points to it.
            let found = match future_type == local_set {
                true => Ok(address),
                false => target
                    .value(future_type, address)
                    .and_then(|pin| std_values::pin_pointer(&pin)?.read_pointer())
                    .map_err(|error| error.message()),
            };
            match found {
                Ok(at) if live_local_set(target, &tasks, local_set, at) => {
                    return Ok(BlockOnFuture::one(decoder.decode(local_set, at)));
                }
                Ok(at) => format!(
                    "`{local}` leads to {at:#x}, where no live LocalSet is{}",
                    tasks_that_may_hang(target, local_set, at)
                ),
                Err(error) => format!("`{local}` holds {address:#x}: {error}"),
            }
        }
        Err(why) => why,
    };
    local_set_on_stack(target, &tasks, frames, index, local_set)
        .map(|address| BlockOnFuture::one(decoder.decode(local_set, address)))
        .map_err(|search| {
            format!(
                "cannot read the block_on future, a LocalSet, so the tasks spawned on it are not \
                 listed: {why}, and {search}"
            )
        })
}

/// What the strong count of a LocalSet's shared state says of the tasks that may be
/// missing: each task spawned on it holds one, beside the LocalSet itself.
fn tasks_that_may_hang(target: &Target<'_>, local_set: DieRef, address: u64) -> String {
    target
        .value(local_set, address)
        .and_then(|value| std_values::at_path(&value, runtime::LOCAL_SET_SHARED_ARC))
        .and_then(|arc| std_values::arc_strong_count(&arc))
        .ok()
        .filter(|&count| (1..1 << 32).contains(&count))
        .map(|count| {
            format!(
                " (its shared state is held {count} times: up to {} tasks may hang from it)",
                count - 1
            )
        })
        .unwrap_or_default()
}

/// Whether `address` holds a LocalSet whose shared state is a live LocalSet's.
fn live_local_set(
    target: &Target<'_>,
    tasks: &TaskReader<'_>,
    local_set: DieRef,
    address: u64,
) -> bool {
    target
        .value(local_set, address)
        .and_then(|value| std_values::at_path(&value, runtime::LOCAL_SET_SHARED))
        .is_ok_and(|shared| TaskSource::of_local_shared(shared).is_plausible(tasks))
}

/// The `LocalSet` type when the block_on future is one, or a `Pin<&mut LocalSet>`.
fn local_set_type(target: &Target<'_>, future_type: DieRef) -> Option<DieRef> {
    let info = target.debug.type_info(future_type).ok()?;
    if info.name == runtime::LOCAL_SET_TYPE {
        return Some(future_type);
    }
    let pointer = std_values::pin_pointer_type(target.debug, &info)?;
    let pointee = target.debug.type_info(pointer.target?).ok()?;
    (pointee.name == runtime::LOCAL_SET_TYPE).then_some(pointee.die)
}

/// Where on the stack, from the block_on frame out, the LocalSet it blocks on lies: the
/// innermost place holding a `LocalSet` whose shared state is a live LocalSet's (a moved-from
/// copy in an outer frame shares it, so the first one found is the one).
fn local_set_on_stack(
    target: &Target<'_>,
    tasks: &TaskReader<'_>,
    frames: &[ResolvedFrame<'_>],
    index: usize,
    local_set: DieRef,
) -> Result<u64, String> {
    let SearchedStack { start, end, .. } = searched_stack(frames, index)?;
    let first = start.checked_next_multiple_of(8).unwrap_or(start);
    let mut checked = 0;
    for address in (first..end).step_by(8) {
        let Ok(value) = target.value(local_set, address) else {
            continue;
        };
        let Ok(shared) = std_values::at_path(&value, runtime::LOCAL_SET_SHARED) else {
            continue;
        };
        // A LocalSet's shared state is on the heap: stack bytes that lead back into this
        // stack are not one.
        if (start..end).contains(&shared.address) {
            continue;
        }
        checked += 1;
        if checked > MAX_CANDIDATES {
            break;
        }
        if TaskSource::of_local_shared(shared).is_plausible(tasks) {
            return Ok(address);
        }
    }
    Err(format!(
        "no LocalSet was found on the stack between {start:#x} and {end:#x}"
    ))
}

/// Where the stack search found the future, and how many identical copies it saw.
struct Found {
    address: u64,
    copies: usize,
}

impl Found {
    fn decode(&self, decoder: &FutureDecoder<'_>, future_type: DieRef) -> BlockOnFuture {
        BlockOnFuture {
            node: decoder.decode(future_type, self.address),
            copies: self.copies,
        }
    }
}

/// The pointer the `Pin<&mut F>` local holds: found from DWARF and the frame's stack
/// pointer where that suffices, else as the debugger read it.
fn local_pointer(
    target: &Target<'_>,
    frames: &[ResolvedFrame<'_>],
    index: usize,
    local: &str,
) -> Result<u64, String> {
    if let Some(pointer) = local_pointer_from_dwarf(target, frames, index, local) {
        return Ok(pointer);
    }
    let frame = &frames[index];
    if let Some(error) = frame.input.local_errors.get(local) {
        return Err(error.clone());
    }
    frame
        .input
        .locals
        .get(local)
        .and_then(|bytes| bytes.pointer())
        .ok_or_else(|| format!("`{local}` is not available in this frame"))
}

/// The local's value read where DWARF places it, in a physical frame (inlined calls have
/// scopes of their own) whose stack pointer the debugger gave.
fn local_pointer_from_dwarf(
    target: &Target<'_>,
    frames: &[ResolvedFrame<'_>],
    index: usize,
    local: &str,
) -> Option<u64> {
    let input = frames[index].input;
    if input.inlined {
        return None;
    }
    let frame = PhysicalFrame {
        pc: physical_pc(target, frames, index)?,
        sp: input.sp?,
        fp: input.fp,
    };
    let address = target
        .debug
        .local_address(frame, local, target.memory, target.load_bias)
        .ok()??;
    target.memory.read_u64(address).ok()
}

/// The link-time pc of the physical frame at `index`, as `resolve_frames` takes it: the
/// innermost pc of its group of inlined frames (LLDB gives the others call-site
/// addresses), less one in outer frames, whose pc is a return address.
fn physical_pc(target: &Target<'_>, frames: &[ResolvedFrame<'_>], index: usize) -> Option<u64> {
    let group_start = frames[..index]
        .iter()
        .rposition(|frame| !frame.input.inlined)
        .map_or(0, |before| before + 1);
    frames[group_start]
        .input
        .pc
        .checked_sub(target.load_bias)?
        .checked_sub(u64::from(group_start > 0))
}

/// The stack a block_on future is searched in: from the block_on frame's stack pointer
/// out to the thread's outermost frame, at most `MAX_SEARCHED_STACK`.
struct SearchedStack {
    start: u64,
    end: u64,
    /// Where each physical frame from block_on's out begins (inlined frames share one),
    /// lowest first.
    frame_starts: Vec<u64>,
}

fn searched_stack(frames: &[ResolvedFrame<'_>], index: usize) -> Result<SearchedStack, String> {
    let start = frames[index]
        .input
        .sp
        .ok_or("the debugger gave no stack pointer for the block_on frame")?;
    let mut frame_starts: Vec<u64> = frames[index..]
        .iter()
        .filter_map(|frame| frame.input.sp)
        .filter(|&sp| sp >= start)
        .collect();
    frame_starts.sort_unstable();
    frame_starts.dedup();
    let end = frame_starts
        .last()
        .copied()
        .unwrap_or(start)
        .min(start.saturating_add(MAX_SEARCHED_STACK));
    Ok(SearchedStack {
        start,
        end,
        frame_starts,
    })
}

/// Where on the stack a pinned block_on future lies. `block_on` pins the future in its own
/// frame (or, inlined, in its caller's), and never moves it after the first poll: the copy
/// whose state is a suspension, and whose whole await tree decodes as a consistent
/// suspended chain, in the innermost frame that has one, is it. Copies from before the
/// move into `block_on` are still unresumed. Where an optimized frame holds several valid
/// copies, the one a live frame's `Pin<&mut F>` points to is pinned; copies no pointer
/// leads to whose trees are all the same are that tree, seen several times.
fn search_stack(
    target: &Target<'_>,
    decoder: &FutureDecoder<'_>,
    frames: &[ResolvedFrame<'_>],
    index: usize,
    future_type: DieRef,
) -> Result<Found, String> {
    let stack = searched_stack(frames, index)?;
    let info = target
        .debug
        .type_info(future_type)
        .map_err(|error| error.message())?;
    let size = info
        .size
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("{} has no size in DWARF", info.name))?;
    if info.variant_part.is_none() {
        return Err(format!(
            "the stack is searched only for async fns and blocks, and {} is neither",
            info.name
        ));
    }
    let scratch = scratch_decoder(decoder);
    let candidate = Candidate {
        future_type,
        name: &info.name,
        size,
    };
    let valid = valid_copies(target, &scratch, &stack, &candidate)?;
    let SearchedStack { start, end, .. } = stack;
    let many = match valid.as_slice() {
        [address] => {
            return Ok(Found {
                address: *address,
                copies: 1,
            })
        }
        [] => {
            return Err(format!(
                "no suspended {} was found on the stack between {start:#x} and {end:#x} (not polled yet, or finished)",
                info.name
            ))
        }
        many => many,
    };
    let referenced = referenced_copies(target, start, end, many, size);
    if let [pinned] = referenced.as_slice() {
        return Ok(Found {
            address: *pinned,
            copies: 1,
        });
    }
    let shapes: Vec<String> = many
        .iter()
        .map(|&address| tree_shape(&scratch.decode(future_type, address)))
        .collect();
    if shapes.iter().all(|shape| *shape == shapes[0]) {
        return Ok(Found {
            address: many[0],
            copies: many.len(),
        });
    }
    Err(format!(
        "{} places on the stack hold a valid suspended {} ({}) whose trees differ, and no pointer tells which one block_on pinned",
        many.len(),
        info.name,
        many.iter().map(|address| format!("{address:#x}")).collect::<Vec<_>>().join(", ")
    ))
}

/// The future type a stack is searched for.
struct Candidate<'n> {
    future_type: DieRef,
    name: &'n str,
    size: u64,
}

/// The addresses in `stack` holding a valid suspended copy of the candidate, in the
/// innermost frame that holds any.
fn valid_copies(
    target: &Target<'_>,
    scratch: &FutureDecoder<'_>,
    stack: &SearchedStack,
    candidate: &Candidate<'_>,
) -> Result<Vec<u64>, String> {
    let SearchedStack {
        start,
        end,
        frame_starts,
    } = stack;
    let (start, end, size) = (*start, *end, candidate.size);
    // rustc aligns a coroutine to its most aligned field, at least its discriminant's.
    let step = [8, 4, 2, 1]
        .into_iter()
        .find(|step| size % step == 0)
        .unwrap_or(1);
    let first = start.checked_next_multiple_of(step).unwrap_or(start);
    // Candidates in address order, so frame by frame from block_on's out; the innermost
    // frame holding a valid one decides (copies in outer frames are older, and a look-alike
    // there must not make the answer ambiguous).
    let frame_of =
        |address: u64| frame_starts.partition_point(|&frame_start| frame_start <= address);
    // A local lies inside one frame: bytes that would span a caller's return address (on
    // x86-64 the word below the caller's stack pointer) are leftovers, not a live value.
    let return_addresses: Vec<u64> = frame_starts
        .iter()
        .filter(|&&frame_start| frame_start > start)
        .filter_map(|frame_start| frame_start.checked_sub(RETURN_ADDRESS_SIZE))
        .collect();
    let spans_a_return_address = |address: u64| {
        return_addresses
            .iter()
            .any(|&slot| slot >= address && slot - address < size)
    };
    let future_type = candidate.future_type;
    let mut decoded = 0;
    let mut valid: Vec<u64> = Vec::new();
    for address in (first..end.saturating_sub(size - 1)).step_by(step as usize) {
        if valid
            .first()
            .is_some_and(|&found| frame_of(address) > frame_of(found))
        {
            break;
        }
        if spans_a_return_address(address) || !is_suspended(target, future_type, address) {
            continue;
        }
        decoded += 1;
        if decoded > MAX_CANDIDATES {
            return Err(format!(
                "stopped after {MAX_CANDIDATES} places on the stack that look like a suspended {}",
                candidate.name
            ));
        }
        let mut budget = MAX_PLAUSIBILITY_VALUES;
        if is_consistent_suspension(&scratch.decode(future_type, address))
            && target
                .value(future_type, address)
                .is_ok_and(|value| plausible(target, &value, 0, &mut budget))
        {
            valid.push(address);
        }
    }
    Ok(valid)
}

/// Bytes of stack read at once while looking for pointers to the candidates.
const STACK_CHUNK: u64 = 64 << 10;

/// The candidates a word on the stack between `start` and `end` points to, outside every
/// candidate's own bytes (a copy holds the same self-pointers as the original): the
/// `Pin<&mut F>` of a live frame.
fn referenced_copies(
    target: &Target<'_>,
    start: u64,
    end: u64,
    candidates: &[u64],
    size: u64,
) -> Vec<u64> {
    let inside_a_copy = |address: u64| {
        candidates
            .iter()
            .any(|&copy| address >= copy && address - copy < size)
    };
    let mut referenced: Vec<u64> = Vec::new();
    let first = start.checked_next_multiple_of(8).unwrap_or(start);
    let mut chunk_start = first;
    while chunk_start < end {
        let length = (end - chunk_start).min(STACK_CHUNK) & !7;
        if length == 0 {
            break;
        }
        let mut bytes = vec![0u8; length as usize];
        if target.memory.read(chunk_start, &mut bytes).is_err() {
            break;
        }
        for (slot, word) in bytes.chunks_exact(8).enumerate() {
            let value = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let at = chunk_start + slot as u64 * 8;
            if candidates.contains(&value) && !inside_a_copy(at) && !referenced.contains(&value) {
                referenced.push(value);
            }
        }
        chunk_start += length;
    }
    referenced
}

/// A tree as far as a user reads it: each node's kind, function or type, state, await
/// point and line, and what it waits for; not where in memory it is (copies differ there).
fn tree_shape(node: &FutureNode) -> String {
    let mut shape = format!(
        "{}:{}:{:?}:{:?}:{:?}:{}[",
        node.kind.name(),
        node.function().unwrap_or(node.type_name()),
        node.state,
        node.await_point().map(u64::from),
        node.location.as_ref().map(|location| location.line),
        node.error().is_some(),
    );
    for child in &node.children {
        shape.push_str(&tree_shape(child));
    }
    shape.push(']');
    shape
}

/// Whether a candidate's bytes could be a live value of its type, beyond its await chain:
/// every enum inside holds one of its variants, and every pointer that cannot be null
/// (references, `NonNull`, and so `Box`, `Arc`, `Vec`) is either dangling-by-design (a
/// small aligned value, as for empty collections) or points at readable memory. Stack
/// garbage that happens to hold a suspend state rarely passes.
fn plausible(target: &Target<'_>, value: &Value<'_>, depth: usize, budget: &mut usize) -> bool {
    if depth > MAX_PLAUSIBILITY_DEPTH || *budget == 0 {
        return true;
    }
    *budget -= 1;
    let ty = &value.ty;
    let points_somewhere =
        |address: u64| address < DANGLING_LIMIT || target.memory.read(address, &mut [0u8]).is_ok();
    match ty.tag {
        TypeTag::Pointer if ty.name.starts_with(rust::SHARED_REFERENCE_PREFIX) => value
            .read_pointer()
            .is_ok_and(|address| address != 0 && points_somewhere(address)),
        TypeTag::Struct if ty.name.starts_with(rust::NON_NULL_PREFIX) => value
            .read_pointer()
            .is_ok_and(|address| address != 0 && points_somewhere(address)),
        TypeTag::Enumeration => value.variant().is_ok(),
        TypeTag::Struct if ty.variant_part.is_some() => value
            .variant()
            .is_ok_and(|(_, payload)| plausible(target, &payload, depth + 1, budget)),
        TypeTag::Struct => ty.fields.iter().all(|field| {
            let Some(field_type) = field.ty else {
                return true;
            };
            let Some(address) = value.address.checked_add(field.offset) else {
                return false;
            };
            target
                .value(field_type, address)
                .is_ok_and(|field| plausible(target, &field, depth + 1, budget))
        }),
        _ => true,
    }
}

/// A decoder like `decoder` for trying addresses: decoding a look-alike must leave no
/// trace (no LocalSet noted).
fn scratch_decoder<'a>(decoder: &FutureDecoder<'a>) -> FutureDecoder<'a> {
    let scratch = FutureDecoder::new(decoder.target()).with_live_process(decoder.live());
    match decoder.tasks() {
        Some(tasks) => scratch.with_tasks(tasks),
        None => scratch,
    }
}

/// Whether `address` holds a coroutine of `ty` in one of its suspend states.
fn is_suspended(target: &Target<'_>, ty: DieRef, address: u64) -> bool {
    let Ok(value) = target.value(ty, address) else {
        return false;
    };
    crate::future::coroutine_state(&value).is_ok_and(|state| state == CoroutineState::Suspended)
}

/// A suspended coroutine whose tree has no error anywhere, and in which every coroutine a
/// suspended coroutine
/// awaits is suspended too: an awaitee is polled before its awaiter yields, so it can be
/// neither unresumed nor finished. (`select!`/`join!` branches are exempt: they may be
/// disabled or done.)
fn is_consistent_suspension(root: &FutureNode) -> bool {
    root.state == Some(CoroutineState::Suspended) && decodes_cleanly(root)
}

fn decodes_cleanly(node: &FutureNode) -> bool {
    let awaiter_suspended =
        node.kind.is_coroutine() && node.state == Some(CoroutineState::Suspended);
    node.error().is_none()
        && node.children.iter().all(|child| {
            let awaited =
                awaiter_suspended && child.kind.is_coroutine() && child.branch().is_none();
            (!awaited || child.state == Some(CoroutineState::Suspended)) && decodes_cleanly(child)
        })
}

/// The future a `block_on` local points to: its type parameter, or X when that parameter is
/// `Pin<&mut X>` (the local then holds the pointer to X itself).
fn unpinned(target: &Target<'_>, future_type: DieRef) -> DieRef {
    target
        .debug
        .type_info(future_type)
        .ok()
        .and_then(|info| std_values::pin_pointer_type(target.debug, &info))
        .filter(|pointer| pointer.name.starts_with(rust::MUT_REFERENCE_PREFIX))
        .and_then(|pointer| pointer.target)
        .unwrap_or(future_type)
}

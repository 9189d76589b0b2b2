"""Reading a 64-bit little-endian ELF core's segments and auxiliary vector, enough to find
the vDSO's pages (for the tests that check what a core holds of the clock)."""

import struct

PT_LOAD, PT_NOTE, PF_W = 1, 4, 2
NT_AUXV, AT_SYSINFO_EHDR = 6, 33


def core_segments_and_auxv(path):
    """A 64-bit little-endian core's PT_LOAD segments as (address, size in memory, flags,
    bytes in the file) and its auxiliary vector as a dict, read from its ELF headers and notes."""
    with open(path, "rb") as core:
        data = core.read()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    segments, auxv = [], {}
    for index in range(phnum):
        p_type, p_flags, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + index * phentsize)
        if p_type == PT_LOAD:
            segments.append((vaddr, memsz, p_flags, data[offset:offset + filesz]))
        elif p_type == PT_NOTE:
            position, end = offset, offset + filesz
            while position + 12 <= end:
                namesz, descsz, note_type = struct.unpack_from("<III", data, position)
                desc = position + 12 + (namesz + 3) // 4 * 4
                if note_type == NT_AUXV:
                    pairs = struct.unpack_from("<%dQ" % (descsz // 8), data, desc)
                    auxv.update(zip(pairs[0::2], pairs[1::2]))
                position = desc + (descsz + 3) // 4 * 4
    return segments, auxv


def vdso_pages(path):
    """The bytes the core holds of the vDSO's code, and of each of the read-only mappings
    that end, one after another, where the vDSO begins (its data pages: [vvar] and, from
    Linux 6.13, [vvar_vclock]); none when the core leaves them out."""
    segments, auxv = core_segments_and_auxv(path)
    vdso = auxv[AT_SYSINFO_EHDR]
    [code] = [data for address, _, _, data in segments if address == vdso]
    data_pages, start = [], vdso
    for address, size, flags, data in sorted(segments, reverse=True):
        if address < start and address + size == start and not flags & PF_W:
            data_pages.append(data)
            start = address
    return code, data_pages

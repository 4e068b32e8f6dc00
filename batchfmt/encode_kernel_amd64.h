// The body of the record kernels, encodeRecords512 (encode_amd64.s), encodeRecordsY
// (encode_avx2_amd64.s) and encodeRecordsP (encode_pclmul_amd64.s), which include it right
// after their TEXT lines; it is documented
// there. Each defines first: LOADSTATE and STORESTATE, which move the checksum state from and
// to the Folder state at DI (and load the fold constant); COPY(l256, lfold, l64, ltail, l16,
// l8, l4, l1, ladvance, done), which copies R12 bytes from R11 to R9 and folds the blocks
// behind; and FOLDBLOCK, which folds the block at R10 and moves R10 past it (it may clobber
// AX).

	MOVQ      acc+0(FP), DI
	LOADSTATE
	MOVQ      dst+8(FP), R10
	MOVQ      w+16(FP), R9
	ADDQ      R10, R9
	MOVQ      end+24(FP), R8
	ADDQ      R10, R8
	MOVQ      recs_base+32(FP), SI
	MOVQ      recs_len+40(FP), CX
	MOVQ      $0, metered-8(SP)
	XORQ      DI, DI
	MOVQ      metas_len+64(FP), AX
	TESTQ     AX, AX
	JZ        start
	CMPQ      AX, CX
	CMOVQLT   AX, CX // as many records as both slices hold
	MOVQ      metas_base+56(FP), DI

start:
	TESTQ CX, CX
	JZ    drain

record:
	// Prefetch the record 4 ahead and the headers of the record 2 ahead, which the
	// hardware's prefetcher does not follow (they are allocations of their own). A nil
	// pointer is replaced by SI: a prefetch never faults, but one of an unmapped address
	// can cost a page walk. (Which of these are prefetched, and how far ahead, moves
	// encoding by well under a microsecond per MiB.)
	CMPQ       CX, $4
	JBE        fetchNear
	PREFETCHT0 (4*64)(SI)

fetchNear:
	CMPQ       CX, $2
	JBE        fetched
	MOVQ       (2*64+16)(SI), AX
	TESTQ      AX, AX
	CMOVQEQ    SI, AX
	PREFETCHT0 (AX)

fetched:
	TESTQ DI, DI
	JZ    size
	MOVL 8(DI), DX
	ADDQ R9, DX     // the frame's end
	CMPQ DX, R8
	JA   fail
	MOVL 0(DI), AX
	MOVL AX, (R9)   // magic and metered size; a frame is at least 4 bytes
	MOVL 4(DI), AX
	ADDQ AX, R9
	CMPL 12(DI), $0
	JE   count
	MOVQ 0(SI), AX
	BSWAPQ AX
	MOVQ AX, (R9)
	ADDQ $8, R9

count:
	CMPQ R9, DX
	JA   fail
	MOVQ 16(SI), BX // headers
	MOVQ 24(SI), R12
#ifdef ONESMALLHEADER
	ONESMALLHEADER(countAny, body)

countAny:
#endif
	LEAQ (R12)(R12*2), R14
	SHLQ $4, R14
	ADDQ BX, R14
	PUTLEN(R12, countEscape, countDone)

header:
	CMPQ BX, R14
	JAE  body
	CMPQ R9, DX
	JA   fail
#ifdef SMALLHEADER
	SMALLHEADER(headerAny)
	ADDQ $48, BX
	JMP  header

headerAny:
#endif
	MOVQ 8(BX), R12
	PUTLEN(R12, nameEscape, nameLen)
	MOVQ 0(BX), R11
	COPY(name256, nameFold, name64, nameTail, name16, name8, name4, name1, nameAdvance, nameDone)
	CMPQ R9, DX
	JA   fail
	MOVQ 32(BX), R12
	PUTLEN(R12, valueEscape, valueLen)
	MOVQ 24(BX), R11
	COPY(value256, valueFold, value64, valueTail, value16, value8, value4, value1, valueAdvance, valueDone)
	ADDQ $48, BX
	JMP  header

body:
	MOVQ 40(SI), R11
	MOVQ 48(SI), R12
	COPY(body256, bodyFold, body64, bodyTail, body16, body8, body4, body1, bodyAdvance, bodyDone)
	CMPQ R9, DX
	JNE  fail

recordFold:
	// Fold every block now LAG behind: records without a piece of 256 bytes or more
	// fold nothing while they are copied.
	MOVQ R9, AX
	SUBQ R10, AX
	CMPQ AX, $(256+LAG)
	JB   recordNext
	FOLDBLOCK
	JMP  recordFold

recordNext:
	ADDQ  $64, SI
	LEAQ  16(DI), AX
	TESTQ DI, DI
	CMOVQNE AX, DI
	DECQ  CX
	JNZ   record

drain:
	// The end: fold every whole block written.
	MOVQ R9, AX
	SUBQ R10, AX
	CMPQ AX, $256
	JB   done
	FOLDBLOCK
	JMP  drain

done:
	MOVQ      acc+0(FP), DI
	STORESTATE
	VZEROUPPER
	MOVQ      dst+8(FP), AX
	SUBQ      AX, R10
	MOVQ      R10, folded+88(FP)
	JMP       results

stop:
	// Without metas: the record at SI is the caller's to handle; acc is left as it was.
	VZEROUPPER
	MOVQ $0, folded+88(FP)

results:
	MOVQ dst+8(FP), AX
	SUBQ AX, R9
	MOVQ R9, written+80(FP)
	MOVQ metered-8(SP), AX
	MOVQ AX, metered+96(FP)
	MOVQ recs_base+32(FP), AX
	SUBQ AX, SI
	SHRQ $6, SI
	MOVQ SI, done+104(FP)
	RET

fail:
	VZEROUPPER
	MOVQ $-1, written+80(FP)
	MOVQ $0, folded+88(FP)
	MOVQ $0, metered+96(FP)
	MOVQ $0, done+104(FP)
	RET

size:
	// Without metas: size the record at SI, then write its magic byte, metered size and
	// timestamp, and go on at count.
	SIZEHEADERS(R11, DX, stop)
	MOVQ metered-8(SP), AX
	ADDQ R11, AX
	CMPQ AX, $0x100000 // MaxAppendBytes: the caller reports the append
	JA   stop
	LEADOF(R11, DX, R12, R14)
	ADDQ R9, DX        // the frame's end
	CMPQ DX, R8
	JA   stop          // no room: the caller grows the buffer
	MOVQ metered-8(SP), R14
	ADDQ R11, R14
	MOVQ R14, metered-8(SP) // the total of the records written
	MOVL R12, (R9)     // magic and metered size; a frame is at least 4 bytes
	LEAQ 1(R9)(AX*1), R9
	TESTQ BX, BX
	JZ   count
	MOVQ 0(SI), AX
	BSWAPQ AX
	MOVQ AX, (R9)
	ADDQ $8, R9
	JMP  count

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest: the C binding of the Tempest interface (Tempest Interface
 * Specification rev 1.2.1, Reinhardt 1995) on the tempest machine.
 *
 * This version provides sections 3.1 (virtual memory management), 3.2
 * (block access control), 3.3 (fine-grain messaging: active messages
 * with W, R, F and Ba items), 3.4 (bulk data transfer: channels), 3.5
 * (timers) and 3.6 (TPPI_resume_va).
 * Names starting with TPPI_ are the specification's; names starting with
 * tempest_ are this implementation's extensions (documented below).
 *
 * Execution model (spec section 2; docs/tempest.rst says more):
 *  - Linking any TPPI_ call into a program starts the node's ONE protocol
 *    thread before main().  It runs message and timer handlers to
 *    completion, one at a time:
 *      * on CPU 1, dedicated to it, when the node has two or more vCPUs
 *        (CPU 1 is then not available to rt_cpu_call());
 *      * on CPU 0 from the node controller's interrupt when the node has
 *        one vCPU: handlers then interrupt main() wherever it is.
 *    Computation code (main() and whatever it runs on other CPUs) never
 *    has to poll for handlers to run.
 *  - Pending events are taken in the specification's priority order,
 *    re-checked after every handler: block access and page faults (in the
 *    order they happened), control events (timers; peer-down and
 *    send-error reports), then messages.  Messages from one node on one
 *    network are handled in the order they were sent.
 *  - Block access and page faults (spec section 2): a load or store of a
 *    computation thread that its block's tag forbids (Table 1), or that
 *    meets an unmapped page of the user-managed segment, suspends that
 *    thread (its CPU waits, polling briefly and then sleeping) and runs
 *    the registered handler on the protocol thread; TPPI_resume_va() lets
 *    it retry the access.  The protocol thread itself must not make an
 *    access its tags forbid (spec section 2: undefined; here the node
 *    stops with a crash report), and neither may computation code for
 *    which no handler is registered.
 *  - Two networks, after SP Active Messages and FLASH: sends from
 *    computation code travel on the request network, sends from handlers
 *    on the reply network.  A handler whose send finds the reply ring
 *    full keeps taking arriving packets off the receive ring into a
 *    software backlog (handled, in order, after it), so the device keeps
 *    returning credits and two nodes replying to each other cannot
 *    deadlock.  A handler must not wait for another message to arrive
 *    (it would wait forever: handlers run one at a time).
 *  - Handlers may call any TPPI_ function, printf() and malloc().  On a
 *    one-vCPU node they run in interrupt context: they must not wait for
 *    anything main() does, and main() sees them as asynchronous.
 *  - A message body is a stream of 32-bit words; a handler reads it with
 *    TPPI_recv_W() and TPPI_recv_R() (or forwards it with F items) and
 *    must consume all of it.  Leaving part unread, reading past the end
 *    and naming a handler outside the program's code are reported on the
 *    console ("*** tempest: ...") and counted (tempest_get_stats()).
 *
 * Bad arguments never crash the node: a send with a bad item (an R
 * region not word-aligned or not a multiple of 4 bytes, an F outside a
 * handler or longer than what is left, a body over TPPI_MAX_AM_BYTES),
 * a destination not in the cluster or a handler outside the program's
 * code is not sent, is reported on the console and counted.
 */
#ifndef TEMPEST_H
#define TEMPEST_H

#include <stdint.h>

#include "tempest/tempest-hw.h"

/* ---- 3.1.1, 3.2.2: page and tag block sizes ------------------------ */
#define TPPI_PAGE_SHIFT         TEMPEST_PAGE_SHIFT
#define TPPI_PAGE_SIZE          (1 << TPPI_PAGE_SHIFT)
#define TPPI_TAG_BLK_SHIFT      TEMPEST_TAG_BLK_SHIFT
#define TPPI_TAG_BLK_SIZE       (1 << TPPI_TAG_BLK_SHIFT)

/*
 * The user-managed virtual segment (3.1): the same addresses on every
 * node, integers (cast them: (double *)TPPI_SEGMENT_BASE).  Only pages
 * mapped there with TPPI_alloc_and_map() have block access tags.
 */
#define TPPI_SEGMENT_BASE       TEMPEST_SEGMENT_BASE
#define TPPI_SEGMENT_SIZE       TEMPEST_SEGMENT_SIZE

/* ---- 3.2.1, 3.2.5: access tags and tag changes ---------------------- */
/*
 * The block access tags (3.2.1), in the node controller's order
 * (TEMPEST_TAG_*), and the tag changes of Table 2 (3.2.5).  A change also
 * says what the tag was: applied to a block whose tag is not in its row
 * of Table 2 it leaves the block with the tag it names all the same
 * (Validate_RO on a Writable block makes it ReadOnly).
 */
typedef enum {
    TPPI_Blk_Busy,
    TPPI_Blk_Invalid,
    TPPI_Blk_ReadOnly,
    TPPI_Blk_Writable
} TPPI_BlkAccTag;
#define TPPI_NUM_BLK_ACC_TAGS   4
#define TPPI_MAX_BLK_ACC_TAG    (TPPI_NUM_BLK_ACC_TAGS - 1)

typedef enum {
    TPPI_Blk_Validate_RW,
    TPPI_Blk_Upgrade_RW,
    TPPI_Blk_Validate_RO,
    TPPI_Blk_Downgrade_RO,
    TPPI_Blk_Invalidate,
    TPPI_Blk_Mark_Busy,
    TPPI_Blk_No_Tag_Change,
    TPPI_Blk_Invalid_To_Busy,
    TPPI_Blk_Busy_To_Invalid
} TPPI_BlkTagChange;

/* ---- 3.1.2: page modes --------------------------------------------- */
typedef unsigned int TPPI_PageMode;
#define TPPI_NUM_PAGE_MODES     16
#define TPPI_MAX_PAGE_MODE      (TPPI_NUM_PAGE_MODES - 1)

/* ---- 3.3.1: node identifiers --------------------------------------- */
/* A node number, 0 .. TPPI_num_nodes - 1. */
typedef unsigned int TPPI_NodeId;

/* The number of nodes in the cluster; valid from main() on. */
extern unsigned TPPI_num_nodes;

/* This node's number; valid from main() on. */
extern TPPI_NodeId TPPI_self_address;

/* ---- 3.1.3: page allocation and deallocation ----------------------- */
/*
 * TPPI_alloc_and_map: takes a free page frame of the node's tagged memory
 * (TEMPEST_TAGMEM_BASE; its size is the machine's tagmem property), fills
 * it with zeros, gives every block the tag @acc and maps it at @pg, which
 * every CPU of the node sees when it returns.  @mode (below
 * TPPI_NUM_PAGE_MODES) chooses the page's block access fault handlers;
 * @home and @usr_ptr are kept for TPPI_get_page_* and the handlers.
 * Returns 1, or 0 and changes nothing if no frame is free (or the node has
 * no tagged memory), @pg is not page-aligned, is not in the user-managed
 * segment or is already mapped, @mode is not a page mode or @acc not a
 * tag.  May be called from computation code and from handlers.
 */
int TPPI_alloc_and_map(void *pg, TPPI_PageMode mode, TPPI_BlkAccTag acc,
                       TPPI_NodeId home, void *usr_ptr);

/*
 * TPPI_unmap_and_free: removes the mapping of the user-managed page @pg
 * (every CPU's TLB included) and frees its frame.  Returns 1, or 0 and
 * changes nothing if @pg is not page-aligned, not in the segment or not
 * mapped.  Threads still suspended on the page stay suspended.
 */
int TPPI_unmap_and_free(void *pg);

/*
 * TPPI_remap: moves the frame mapped at @old_pg to @new_pg: the data, the
 * block tags, the page mode, home and usr_ptr go with it; @old_pg is
 * unmapped (every CPU's TLB included).  Returns 1 (also when @old_pg ==
 * @new_pg is mapped), or 0 and changes nothing if either is not
 * page-aligned or not in the segment, @old_pg is not mapped or @new_pg
 * is.
 */
int TPPI_remap(void *old_pg, void *new_pg);

/* ---- 3.1.4: page fault handlers ------------------------------------ */
/*
 * A page fault handler: a computation thread accessed @va, in an unmapped
 * page of the segment, with the instruction at @pc (the program's code is
 * below 2 GiB: the int holds it whole), a store if @is_write.  The thread
 * stays suspended until TPPI_resume_va() for the page (any block of it).
 */
typedef void (*TPPI_PageFaultHandlerPtr)(void *va, int pc, int is_write);

/*
 * TPPI_register_page_fault_handler: makes @fn the page fault handler (NULL:
 * none; a page fault then stops the node with a crash report).  A page
 * that is mapped by the time the protocol thread takes the fault resumes
 * the thread without calling it.
 */
void TPPI_register_page_fault_handler(TPPI_PageFaultHandlerPtr fn);

/* ---- 3.1.5: per-page information ----------------------------------- */
typedef struct {
    TPPI_PageMode mode;
    void *usr_ptr;
    TPPI_NodeId home;
} TPPI_PageInfo;

/*
 * TPPI_get_page_info: for the page holding @va (any alignment), returns 1
 * if it is mapped, and then writes its mode, usr_ptr and home to
 * *@info_ptr unless @info_ptr is NULL; 0 if it is not mapped; -1 if @va
 * is not in the user-managed segment or @info_ptr is not aligned for a
 * TPPI_PageInfo.
 */
int TPPI_get_page_info(void *va, TPPI_PageInfo *info_ptr);

/*
 * TPPI_get_page_user_ptr, TPPI_get_page_mode, TPPI_get_page_home: return
 * the usr_ptr, mode and home given when the page holding @va was mapped;
 * NULL or 0 if it is not a mapped page of the segment (the spec leaves
 * that undefined).
 */
void *TPPI_get_page_user_ptr(void *va);
TPPI_PageMode TPPI_get_page_mode(void *va);
TPPI_NodeId TPPI_get_page_home(void *va);

/* ---- 3.2: block access control ------------------------------------- */
/*
 * Blocks (3.2.3) are given as (void *blk_va, int blk_len): blk_len a
 * power of 2 of at least TPPI_TAG_BLK_SIZE, blk_va anywhere inside the
 * block (it is aligned down to blk_len).  A block longer than
 * TPPI_TAG_BLK_SIZE is a superblock: the operation is applied to each
 * minimal block in turn, and may span pages.  A bad block, a change that
 * is not a TPPI_BlkTagChange, or an unmapped page is reported on the
 * console ("*** tempest: ...") and counted (bad_blocks), and that part is
 * skipped.
 */

/*
 * TPPI_get_blk_acc: returns the tag of the block holding @va;
 * TPPI_Blk_Invalid if @va is not in a mapped page of the segment.
 */
TPPI_BlkAccTag TPPI_get_blk_acc(void *va);

/*
 * TPPI_change_blk_acc: changes the tag of the block (blk_va, blk_len) to
 * what @chg names (Table 2).  A change that takes access away
 * (Downgrade_RO, Invalidate, Mark_Busy) is complete on every CPU of the
 * node when it returns: no access the new tag forbids completes after
 * it.  TPPI_Blk_No_Tag_Change does nothing.
 */
void TPPI_change_blk_acc(void *blk_va, int blk_len, TPPI_BlkTagChange chg);

/*
 * TPPI_change_blk_acc_and_copy: copies blk_len bytes from @from (which
 * may itself be in the segment, read regardless of its tags) into the
 * block and changes its tag, with the guarantees of 3.2.6: an access the
 * new tag allows and the old one did not sees the new data; a change that
 * takes access away happens before the copy.  @from NULL: reported,
 * nothing done.
 */
void TPPI_change_blk_acc_and_copy(void *blk_va, int blk_len,
                                  TPPI_BlkTagChange chg, void *from);

/* ---- 3.2.7: block access fault handlers ---------------------------- */
#define TPPI_ReadAccess         0
#define TPPI_WriteAccess        1

/*
 * A block access fault handler: runs on the protocol thread with @va, the
 * faulting address (inside the faulting minimal block), and the usr_ptr
 * and home of its page.  The thread stays suspended until TPPI_resume_va()
 * for the block.
 */
typedef void (*TPPI_BlkAccFaultHandlerPtr)(void *va, void *user_ptr,
                                           TPPI_NodeId home);

/*
 * TPPI_register_blk_acc_fault_handler: makes @fn the handler of @acc
 * (TPPI_ReadAccess or TPPI_WriteAccess) accesses to blocks tagged @tag on
 * pages of mode @mode (NULL: none; such a fault then stops the node with
 * a crash report).  The handler is chosen by the tag when the protocol
 * thread takes the fault: if the tag allows the access by then, the
 * thread is resumed without a handler.  A handler for one of the three
 * combinations that never fault (ReadOnly/read, Writable/read,
 * Writable/write) is registered with a warning on the console and never
 * called.  A mode, tag or access out of range is reported and ignored.
 */
void TPPI_register_blk_acc_fault_handler(TPPI_PageMode mode,
                                         TPPI_BlkAccTag tag, int acc,
                                         TPPI_BlkAccFaultHandlerPtr fn);

/* ---- 3.3.2: sending ------------------------------------------------ */
/*
 * A message handler: runs on the protocol thread of the destination node
 * with the sending node @src and the size of the message body in bytes
 * @size (a multiple of 4, at most TPPI_MAX_AM_BYTES).
 */
typedef void (*TPPI_MessageHandlerPtr)(TPPI_NodeId src, int size);

/*
 * The TPPI_send family: TPPI_send_<items>(dest, pc, <item arguments>)
 * sends to node @dest a message whose body is the items, in order, as a
 * stream of 32-bit words, to be handled there by pc(src, size).  Items:
 *   W  int w               one word
 *   R  void *va, int len   @len bytes (a multiple of 4) at @va (4-byte
 *                          aligned)
 *   F  int len             the next @len bytes (a multiple of 4) of the
 *                          message being handled: only in a handler
 *   Ba void *blk_va, int blk_len, TPPI_BlkTagChange chg
 *                          the blk_len bytes of the block (3.2.3; at most
 *                          a page, in a mapped page of the segment, read
 *                          regardless of its tag) whose tag changes by
 *                          @chg, with 3.2.6's guarantee: after a change
 *                          that takes access away (Invalidate,
 *                          Downgrade_RO, Mark_Busy) the data sent holds
 *                          every write that completed before the change.
 * TPPI_send(dest, pc) sends an empty body.  Every item list exists, as
 * the spec's "polymorphic function" has it (TPPI_send_RR, TPPI_send_BaBa,
 * TPPI_send_WBaRWF, twelve W items, ...): the lists of 0 to 8 W items with
 * at most one R, F or Ba item anywhere among them are in the library
 * (tempest-send.h, generated); any other list a program names is
 * generated for it when it is compiled: 'scripts/tempest cc' finds the
 * names in the program's sources and force-includes their definitions
 * (static inline, from guest/lib/tempest/gen-send.py; another build runs
 * "gen-send.py extra OUT.h SOURCES..." and compiles with -include OUT.h).
 * The builder (tempest_msg_begin() below) and tempest_send_items() take
 * item lists made at run time.  A bad Ba item is reported and nothing is
 * sent, no tag is changed.  Ba items are taken in order: each block's tag
 * changes, then its data is read, before the next item's.
 *
 * A send returns once the message is in the node controller's send ring
 * (R and F data copied: the region may be reused at once); it waits,
 * sleeping, while the ring is full.  A message to this node itself is
 * looped back by the node controller and handled like any other.  Bad
 * arguments: see the top of this file (not sent, reported, counted).
 */

/*
 * An item of a message, for tempest_send_items() and the generated
 * TPPI_send_ functions: @kind TEMPEST_ITEM_WORDS (@len bytes of words at
 * @ptr: one or more W items), _R (@len bytes at @ptr), _F (@len bytes
 * forwarded; @ptr unused) or _BA (the block at @ptr of @len bytes, whose
 * tag changes by @chg).
 */
enum {
    TEMPEST_ITEM_WORDS,
    TEMPEST_ITEM_R,
    TEMPEST_ITEM_F,
    TEMPEST_ITEM_BA,
};

typedef struct tempest_item {
    int kind;
    const void *ptr;
    int len;
    int chg;
} tempest_item;

/* At most this many items in one message (tempest_send_items). */
#define TEMPEST_MAX_ITEMS       (TPPI_MAX_AM_BYTES / 4)

/*
 * tempest_send_items: sends to @dest, for handler @pc, the message whose
 * body is the @n items @items, in order, exactly as the TPPI_send_
 * function of that item list would (every TPPI_send_ function calls it).
 * Returns 0, or -1 if it was refused (reported and counted).
 */
int tempest_send_items(TPPI_NodeId dest, TPPI_MessageHandlerPtr pc,
                       const tempest_item *items, unsigned n);

#include "tempest-send.h"

/* ---- 3.3.3: receiving ---------------------------------------------- */

/*
 * TPPI_recv_W: returns the next word of the message being handled.
 * Past the end of the body, or outside a handler, it returns 0 and
 * reports the overrun (console and counter).
 */
int TPPI_recv_W(void);

/*
 * TPPI_recv_R: copies the next @len bytes of the message being handled to
 * @va (@va 4-byte aligned, @len a multiple of 4).  What lies past the end
 * of the body is zero-filled and the overrun reported; outside a handler,
 * or with @va NULL, misaligned or a bad @len, nothing is copied and the
 * misuse is reported.
 */
void TPPI_recv_R(void *va, int len);

/*
 * TPPI_recv_Ba: writes the next @blk_len bytes of the message being
 * handled into the block (blk_va, blk_len) (regardless of its tag) and
 * changes its tag by @chg, with 3.2.6's guarantee: a load or store the
 * new tag allows (and the old one did not) sees the new data.  A change
 * that takes access away is made before the data is written.  Bad block
 * or change, an unmapped page, a block over a page: reported, the bytes
 * are consumed and nothing is written.  Past the end of the body it
 * zero-fills and reports, as TPPI_recv_R.
 */
void TPPI_recv_Ba(void *blk_va, int blk_len, TPPI_BlkTagChange chg);

/* ---- 3.3.4: message size limit ------------------------------------- */
/*
 * The largest message body in bytes (at least TPPI_TAG_BLK_SIZE + 16, as
 * the specification asks).  A body up to a packet's payload (4064 bytes
 * with node controller 1.11's 4 KiB slots; 224 with 256-byte slots)
 * travels in one packet; a longer one is split into packets and
 * reassembled before its handler runs.
 */
#define TPPI_MAX_AM_BYTES       4096

_Static_assert(TPPI_MAX_AM_BYTES >= TPPI_TAG_BLK_SIZE + 16,
               "TPPI_MAX_AM_BYTES below the specification's minimum");

/* ---- 3.4: bulk data transfer (channels) ---------------------------- */
/*
 * A channel moves one buffer of exactly the size the destination set up,
 * memory to memory, through the node controller's transfer engine (a
 * direct TEMPEST_CMD_XFER into the destination's buffer: no copy on
 * either side, cut into cache-line components that interleave with
 * active messages, so a large send never holds small messages back).
 * The set-up and reset notifications travel as active messages.
 * docs/bulk.rst says more.
 *
 * Life cycle:
 *   source                                destination
 *   ch = TPPI_set_channel_src(dst, fn)
 *   (tell the destination ch)      ---->  TPPI_set_channel_dst(src, ch,
 *                                             buf, bytes, fn)
 *   TPPI_is_channel_established() <----  (notification)
 *   TPPI_channel_send(dst, ch, b, bytes) ->  data lands in buf; then
 *   send callback fn(dst, ch):               receive callback fn(src, ch),
 *   the buffer b may be reused               TPPI_is_channel_ready() != 0
 *                                         TPPI_reset_channel(src, ch)
 *   TPPI_is_channel_reset()       <----  (notification)
 *   ... the next send, ...
 *   TPPI_destroy_channel_src()            TPPI_destroy_channel_dst()
 *
 * Callbacks run on the protocol thread (like message handlers: they must
 * not wait for other handlers).  Channel IDs are unique per source node
 * and never reused (a channel to node D and one to node E never share an
 * ID).  Any alignment and any length from 1 to TPPI_MAX_CHANNEL_BYTES
 * works on this machine (the spec's Blizzard note of 4-byte multiples is
 * not required).
 *
 * Misuse never corrupts data: a send whose size differs from the
 * destination's, a send before the destination's reset notification
 * came back, a send on a channel not yet established, and a reset before
 * the data arrived are refused, reported on the console ("*** tempest:
 * node K: channel C ...") and counted; tempest_channel_send() and
 * tempest_channel_error() say which (TEMPEST_CHAN_E_*).
 */

/* The largest buffer a channel carries between two resets (64 MiB). */
#define TPPI_MAX_CHANNEL_BYTES  (64 << 20)

/* A channel callback: the other endpoint's node and the channel ID. */
typedef void (*TPPI_ChannelHandlerPtr)(TPPI_NodeId node, int channel);

/*
 * TPPI_set_channel_src: creates the source endpoint of a new channel to
 * node @dest; @fn (or NULL) is called on the protocol thread after each
 * send, when its buffer may be reused (here: also when the data is stored
 * at the destination).  Returns the channel ID (>= 0), or -1 if @dest is
 * not in the cluster or memory ran out (reported).
 */
int TPPI_set_channel_src(TPPI_NodeId dest, TPPI_ChannelHandlerPtr fn);

/*
 * TPPI_set_channel_dst: creates the destination endpoint of channel
 * @channel from node @src: each send on it stores exactly @bytes bytes at
 * @buffer, then @fn (or NULL) is called on the protocol thread.  Sends
 * the "established" notification (buffer address and size) to @src.
 * Returns 1, or 0 (reported, nothing sent) if @src is not in the
 * cluster, @buffer is NULL, @bytes is not in 1 .. TPPI_MAX_CHANNEL_BYTES,
 * the endpoint already exists, or memory ran out.
 */
int TPPI_set_channel_dst(TPPI_NodeId src, int channel, void *buffer,
                         int bytes, TPPI_ChannelHandlerPtr fn);

/*
 * TPPI_is_channel_established: on the source, returns non-zero once the
 * destination's "established" notification for @channel to @dest has
 * arrived (the spec's unnamed poll of 3.4.1), 0 before and for an
 * unknown channel.
 */
int TPPI_is_channel_established(TPPI_NodeId dest, int channel);

/*
 * TPPI_channel_send: starts sending @bytes bytes at @buffer on @channel to
 * @dest and returns at once (the buffer must not change until the send
 * callback).  @bytes must equal the destination's size, the channel must
 * be established, and the destination must have reset the channel since
 * the previous send (its notification arrived: TPPI_is_channel_reset()).
 * Computation code whose send comes while the notification is still on
 * its way waits for it up to TEMPEST_CHAN_GRACE_MS; otherwise (and in a
 * handler at once) the send is refused, reported and counted, and
 * nothing is sent.  tempest_channel_send() is the same with a result.
 */
void TPPI_channel_send(TPPI_NodeId dest, int channel, void *buffer,
                       int bytes);

/*
 * TPPI_is_channel_ready: on the destination, returns non-zero once the
 * data of a send on @channel from @src is stored in its buffer, until
 * TPPI_reset_channel(); 0 otherwise and for an unknown channel.
 */
int TPPI_is_channel_ready(TPPI_NodeId src, int channel);

/*
 * TPPI_reset_channel: on the destination, makes @channel from @src ready
 * for the next send and sends the "reset" notification to @src.  A reset
 * before the data of the previous send arrived (the channel is not
 * ready), or of an unknown channel, is refused and reported (no
 * notification: the source cannot overwrite a buffer being read).
 */
void TPPI_reset_channel(TPPI_NodeId src, int channel);

/*
 * TPPI_is_channel_reset: on the source, returns non-zero when the
 * destination's latest notification (its "established" one, or its
 * "reset" after the previous send) has arrived and no send has been
 * made since: a send may go (the spec's unnamed poll of 3.4.2).  0
 * otherwise and for an unknown channel.
 */
int TPPI_is_channel_reset(TPPI_NodeId dest, int channel);

/*
 * TPPI_destroy_channel_src: removes the source endpoint of @channel to
 * @dest.  A send still under way completes first (its callback is then
 * not called; reported).  An unknown channel is reported and ignored.
 */
void TPPI_destroy_channel_src(TPPI_NodeId dest, int channel);

/*
 * TPPI_destroy_channel_dst: removes the destination endpoint of @channel
 * from @src (the spec names this argument dest; it is the source node).
 * Data that arrives for it afterwards is reported.  An unknown channel
 * is reported and ignored.
 */
void TPPI_destroy_channel_dst(TPPI_NodeId src, int channel);

/*
 * 3.4.4 user pointers: one pointer of the program's per endpoint, NULL
 * when the endpoint is created.  The setters do nothing (reported) and
 * the getters return NULL for an unknown channel.
 */
void TPPI_set_channel_src_user_ptr(TPPI_NodeId dest, int channel,
                                   void *user_ptr);
void *TPPI_get_channel_src_user_ptr(TPPI_NodeId dest, int channel);
void TPPI_set_channel_dst_user_ptr(TPPI_NodeId src, int channel,
                                   void *user_ptr);
void *TPPI_get_channel_dst_user_ptr(TPPI_NodeId src, int channel);

/* ---- 3.5: timers --------------------------------------------------- */

/* Timer ticks per second: a tick is 1 us of the node's virtual time. */
#define TPPI_TICKS_PER_SEC      (1000000000 / TEMPEST_TICK_NS)

typedef void (*TPPI_TimerHandlerPtr)(void *user_ptr);

/*
 * TPPI_schedule_timer: makes the protocol thread call fn(user_ptr) once,
 * @ticks ticks from now (ticks >= 0; 0: as soon as possible).  Timers
 * run in deadline order, timers with equal deadlines in the order they
 * were scheduled, before any message waiting at the same time.  Any
 * number may be pending.  May be called from computation code and from
 * handlers.  @fn NULL or @ticks negative: nothing is scheduled, the
 * misuse is reported and counted.
 */
void TPPI_schedule_timer(int ticks, TPPI_TimerHandlerPtr fn, void *user_ptr);

/* ---- 3.6: thread management ---------------------------------------- */
/*
 * TPPI_resume_va: resumes every thread suspended by a block access fault
 * inside the block (blk_va, blk_len), and every thread suspended by a page
 * fault on a page the block overlaps; each retries its access (which
 * faults again if the tag still forbids it).  May be called from any
 * handler or from computation code; resuming a block nobody waits on does
 * nothing.  A bad block specifier is reported and ignored.
 */
void TPPI_resume_va(void *blk_va, int blk_len);

/* ================================================================== */
/* Extensions of this implementation                                   */
/* ================================================================== */

/*
 * The message builder, for item lists made at run time:
 *
 *     tempest_msg m;
 *     tempest_msg_begin(&m, dest, handler);
 *     tempest_msg_W(&m, 1);
 *     tempest_msg_R(&m, buf, 64);
 *     tempest_msg_R(&m, buf2, 128);
 *     tempest_msg_send(&m);
 *
 * sends exactly what TPPI_send_WRR(dest, handler, 1, buf, 64, buf2, 128)
 * would.  R data is read and F data consumed when the message is sent,
 * not when the item is added.  A builder holds up to TEMPEST_MSG_ITEMS
 * items, consecutive W items counting as one, and TEMPEST_MSG_WORDS words
 * in all; adding beyond that, or a bad item, makes the whole message
 * invalid: tempest_msg_send() then reports and sends nothing.  A builder
 * lives on the caller's stack; do not copy one.
 */
#define TEMPEST_MSG_ITEMS       16
#define TEMPEST_MSG_WORDS       64

typedef struct tempest_msg {
    TPPI_NodeId dest;
    TPPI_MessageHandlerPtr pc;
    int error;
    unsigned nitems;
    unsigned nwords;
    struct {
        int kind;
        const void *ptr;
        int len;
        int chg;
    } item[TEMPEST_MSG_ITEMS];
    uint32_t words[TEMPEST_MSG_WORDS];
} tempest_msg;

/* tempest_msg_begin: starts an empty message to @dest for handler @pc. */
void tempest_msg_begin(tempest_msg *m, TPPI_NodeId dest,
                       TPPI_MessageHandlerPtr pc);

/*
 * tempest_msg_W, tempest_msg_R, tempest_msg_F: append a W, R or F item.
 * Each returns 0, or -1 (and marks the message invalid) if the builder is
 * full or the item is bad (R: @va NULL or not 4-byte aligned, @len
 * negative or not a multiple of 4; F: @len negative or not a multiple of
 * 4, or not called in a handler).
 */
int tempest_msg_W(tempest_msg *m, int w);
int tempest_msg_R(tempest_msg *m, const void *va, int len);
int tempest_msg_F(tempest_msg *m, int len);

/*
 * tempest_msg_Ba: appends a Ba item (the block at @blk_va of @blk_len
 * bytes, whose tag changes by @chg): checked, and the tag changed and the
 * data taken, when the message is sent, as for TPPI_send_ functions.
 * Any number of Ba items, like any other item.  Returns 0, or -1 if the
 * builder is full.
 */
int tempest_msg_Ba(tempest_msg *m, void *blk_va, int blk_len,
                   TPPI_BlkTagChange chg);

/*
 * tempest_msg_send: sends the message, as a TPPI_send_ call would.
 * Returns 0 if it was sent, -1 if it was not (invalid message, body over
 * TPPI_MAX_AM_BYTES, bad destination or handler: reported and counted).
 */
int tempest_msg_send(tempest_msg *m);

/*
 * tempest_wait: waits until cond(arg) returns non-zero and returns.  For
 * computation code waiting for what handlers do: cond() is re-checked
 * only when the protocol thread has run handlers (it wakes the waiting
 * CPU when it runs out of work; after a wake-up that found cond() false,
 * 10 us after the first work since, or after 64 handlers) or an interrupt
 * of the waiting CPU's own arrives, so a condition
 * that only time or another computation CPU makes true needs
 * tempest_wait_until().  On a one-vCPU node it first spins for the spin
 * time (tempest_set_spin_us) with IRQs unmasked, handlers running in the
 * spin; then, like on any node, it sleeps in WFI without a time limit.
 * cond() is called with IRQs masked while it sleeps, so it must be short
 * and must not block.  In a handler it returns at once (a handler must
 * not wait).  @cond NULL: returns at once.
 */
void tempest_wait(int (*cond)(void *arg), void *arg);

/*
 * tempest_wait_until: tempest_wait(cond, arg) that also returns once
 * rt_time_ns() (<tempest/rt.h>) has reached @deadline (0: no deadline),
 * the CPU's timer waking it then.  Returns 1 if cond(arg) came true, 0 at
 * the deadline or if @cond is NULL.  In a handler it returns cond(arg) at
 * once.
 */
int tempest_wait_until(int (*cond)(void *arg), void *arg, uint64_t deadline);

/*
 * tempest_flush: waits, sleeping, until the node controller has taken
 * every packet this node has put in its send rings (so that they leave
 * the node even if it exits right after), or about @max_ms milliseconds
 * have passed (0: no limit).  Returns 0, or -1 on the time limit.  At
 * exit() libtempest does this with a limit of 1000 ms.  Messages a
 * handler sends while it runs may follow later.
 */
int tempest_flush(unsigned max_ms);

/*
 * tempest_on_peer_down: makes the protocol thread call fn(node) when the
 * node controller reports that @node is gone (TEMPEST_EV_PEER_DOWN), after
 * the report "*** node K: lost node J" on the console.  @fn NULL (the
 * default): only the report, and a lost link (not a peer that exited)
 * ends this node with status 1, since what the peer sent may be lost
 * with the link: at the program's next tempest_wait*() whose condition
 * is false with nothing left to handle, or one second after the report
 * (not once exit() has begun).  A program that can go on without the
 * peer sets a callback.  Returns the previous callback.
 */
typedef void (*tempest_peer_down_fn)(TPPI_NodeId node);
tempest_peer_down_fn tempest_on_peer_down(tempest_peer_down_fn fn);

/* Counters since start-up, for tests and tuning. */
struct tempest_stats {
    uint64_t msgs_sent;         /* messages handed to the device */
    uint64_t pkts_sent;         /* packets (a message is 1 or more) */
    uint64_t msgs_handled;      /* message handlers run */
    uint64_t timers_run;        /* timer handlers run */
    uint64_t unread;            /* handlers that left bytes unread */
    uint64_t overruns;          /* reads past the end of a message */
    uint64_t bad_handlers;      /* messages dropped: bad handler */
    uint64_t bad_sends;         /* sends refused: bad arguments */
    uint64_t bad_packets;       /* packets dropped: bad fragments */
    uint64_t peers_lost;        /* TEMPEST_EV_PEER_DOWN events */
    uint64_t send_errors;       /* TEMPEST_EV_SEND_ERROR events */
    uint64_t sq_full;           /* times a send found its ring full */
    uint64_t backlog_pkts;      /* packets moved to the backlog */
    uint64_t backlog_max;       /* largest backlog, in packets */
    uint64_t sleeps;            /* times the protocol thread slept */
    uint64_t faults;            /* faults taken (threads suspended) */
    uint64_t page_faults;       /* page fault handlers called */
    uint64_t blk_faults;        /* block access fault handlers called */
    uint64_t resumes;           /* suspended threads resumed */
    uint64_t bad_blocks;        /* bad block specifiers, changes, pages */
    uint64_t waits;             /* times tempest_wait went to sleep */
    uint64_t client_polls;      /* work run from a client's poll
                                   (tempest/client.h, tempest_client_poll) */
    uint64_t client_spins;      /* a client's waits that ended in their
                                   own spin (tempest_client_spin_wait,
                                   tempest_client_idle_wait) */
    uint64_t poll_yields;       /* the protocol thread's sleeps while a
                                   client's polls spun for it */
};

/* tempest_get_stats: copies the counters to *@s (nothing if NULL). */
void tempest_get_stats(struct tempest_stats *s);

/*
 * tempest_page_frame: returns the physical address of the tagged-memory
 * frame mapped at the page holding @va (for tests and tools: the node
 * controller's TEMPEST_CMD_TAG_GET takes it), or 0 if @va is not in a
 * mapped page of the segment.
 */
uint64_t tempest_page_frame(void *va);

/*
 * tempest_protocol_cpu: returns the CPU the protocol thread runs on (1
 * with a dedicated CPU, 0 when it is interrupt-driven on the only one).
 */
unsigned tempest_protocol_cpu(void);

/*
 * tempest_set_spin_us: sets how long the CPU that polls for messages (the
 * dedicated protocol thread, or on a one-vCPU node computation code in
 * tempest_wait) spins on an empty node, telling the node controller it
 * polls (TEMPEST_NC_POLL), before it sleeps in WFI (default: the node
 * controller's SPIN_US hint, which scripts/tempest run sets to
 * TEMPEST_SPIN_US_DEFAULT when every node has a host core and to 0 when
 * not; 0: sleep at once).  Longer: lower latency, more host CPU used.
 */
#define TEMPEST_SPIN_US_DEFAULT 50
void tempest_set_spin_us(unsigned us);

/* ---- bulk transfer: channel results, the transfer engine ----------- */
/*
 * Results of tempest_channel_send() and tempest_channel_error().  The
 * console line of each refusal names it too.
 */
#define TEMPEST_CHAN_OK                 0
#define TEMPEST_CHAN_E_NO_CHANNEL       (-1)    /* no such endpoint */
#define TEMPEST_CHAN_E_BAD_ARG          (-2)    /* NULL buffer, bad size */
#define TEMPEST_CHAN_E_NOT_ESTABLISHED  (-3)    /* no notification yet */
#define TEMPEST_CHAN_E_SIZE             (-4)    /* size differs from dst's */
#define TEMPEST_CHAN_E_NOT_RESET        (-5)    /* send before the reset */
#define TEMPEST_CHAN_E_REFUSED          (-6)    /* the command failed */
#define TEMPEST_CHAN_E_REMOTE           (-7)    /* refused at the dest. */
#define TEMPEST_CHAN_E_NOT_READY        (-8)    /* reset before the data */

/* How long computation code waits for an in-flight reset notification. */
#define TEMPEST_CHAN_GRACE_MS           100

/*
 * tempest_channel_send: TPPI_channel_send() with a result: returns
 * TEMPEST_CHAN_OK when the send is under way, or a TEMPEST_CHAN_E_*
 * code when it was refused (reported on the console; nothing sent).
 */
int tempest_channel_send(TPPI_NodeId dest, int channel, const void *buffer,
                         int bytes);

/*
 * tempest_channel_error: returns the last error recorded on the source
 * endpoint of @channel to @dest (a refused send, or a send the
 * destination's controller refused: TEMPEST_CHAN_E_REMOTE, reported when
 * its completion arrives) and clears it; TEMPEST_CHAN_OK if none;
 * TEMPEST_CHAN_E_NO_CHANNEL for an unknown channel.
 */
int tempest_channel_error(TPPI_NodeId dest, int channel);

/* tempest_channel_strerror: a short text for a TEMPEST_CHAN_* code. */
const char *tempest_channel_strerror(int code);

/* Channel counters since start-up. */
struct tempest_channel_stats {
    uint64_t sends;             /* channel sends started */
    uint64_t bytes_sent;
    uint64_t send_done;         /* send completions (XFER_SENT) */
    uint64_t recvs;             /* data arrivals (XFER_RECV) */
    uint64_t bytes_received;
    uint64_t errors;            /* refusals and misuse reports */
};

/* tempest_get_channel_stats: copies the counters to *@s (if not NULL). */
void tempest_get_channel_stats(struct tempest_channel_stats *s);

/*
 * The transfer engine (node controller 1.4: TEMPEST_CMD_XFER, BUF_POST,
 * FOP), for the libraries above libtempest (libmagic) and for tests.
 * Each call runs FLASH's initiation protocol on the calling CPU's
 * command bank: it writes the arguments, then reads COMMIT; RETRY (the
 * controller is out of resources) is retried by the library, FAIL
 * returns the controller's reason (TEMPEST_CMD_E_*, named by
 * tempest_cmd_reason_name()).  Nothing is checked before the controller
 * sees the command: a bad node, length or address comes back as its
 * reason.  Completions come back to the protocol thread as XFER events,
 * given to the owner of the cookie (bits 63..56: TEMPEST_XFER_CLIENT_*).
 */
#define TEMPEST_XFER_CLIENT_SHIFT       56
#define TEMPEST_XFER_CLIENT_CHANNEL     0       /* libtempest's channels */
#define TEMPEST_XFER_CLIENT_MAGIC       1       /* libmagic (<magic.h>) */
#define TEMPEST_XFER_CLIENT_USER        2       /* programs, tests */
#define TEMPEST_XFER_CLIENTS            8

/* tempest_xfer_present: returns 1 if the node controller has the engine. */
int tempest_xfer_present(void);

/*
 * tempest_xfer: TEMPEST_CMD_XFER: sends @len bytes at @src (any
 * alignment) to node @dest, into memory at address @where there (memory
 * copy), or, with TEMPEST_XFER_TYPED in @flags, into a buffer the
 * destination posted for message type @where.  @cookie comes back in the
 * XFER_SENT event here and the XFER_RECV event there.  Waits (sleeping in
 * computation code) while the controller answers RETRY.  Returns 0 and
 * the message id in *@mid (if not NULL), or the reason (> 0) the
 * controller failed the command (then nothing was sent).
 */
int tempest_xfer(TPPI_NodeId dest, const void *src, uint64_t len,
                 uint64_t where, unsigned flags, uint64_t cookie,
                 uint64_t *mid);

/*
 * tempest_xfer_try: tempest_xfer() committed once: returns -1 instead of
 * waiting when the controller answers RETRY.
 */
int tempest_xfer_try(TPPI_NodeId dest, const void *src, uint64_t len,
                     uint64_t where, unsigned flags, uint64_t cookie,
                     uint64_t *mid);

/*
 * tempest_buf_post: TEMPEST_CMD_BUF_POST: gives the controller the
 * receive buffer @buf of @len bytes for typed transfers of @type.
 * Returns 0, the reason (> 0) it failed, or -1 if the controller already
 * holds TEMPEST_XFER_MAX_BUFS buffers (RETRY).
 */
int tempest_buf_post(uint32_t type, void *buf, uint64_t len);

/*
 * tempest_fetch_op: TEMPEST_CMD_FOP: makes the controller of node @home
 * apply @op (TEMPEST_FOP_ADD, _SWAP, _CAS) to the 64-bit word at @addr
 * there (8-byte aligned), with @operand (and, for CAS, @compare: the
 * word becomes @operand only if it equals @compare), with no handler at
 * @home.  Waits for the reply (the waiting read: COMMIT answers RETRY
 * until it is in, with IRQs masked on this CPU meanwhile).  Returns 0
 * and the word's old value in *@old (if not NULL), or the reason (> 0).
 */
int tempest_fetch_op(TPPI_NodeId home, uint64_t *addr, unsigned op,
                     uint64_t operand, uint64_t compare, uint64_t *old);

/*
 * tempest_on_protocol_thread: returns 1 if the caller runs on the
 * protocol thread (a handler, a callback, an XFER hook), where nothing
 * that the protocol thread itself would do can be waited for; 0 in
 * computation code.
 */
int tempest_on_protocol_thread(void);

/* tempest_cmd_reason_name: a short text for a TEMPEST_CMD_E_* reason. */
const char *tempest_cmd_reason_name(uint32_t reason);

/* A completion of the transfer engine, as the protocol thread got it. */
struct tempest_xfer_event {
    unsigned kind;          /* TEMPEST_EV_XFER_SENT or TEMPEST_EV_XFER_RECV */
    TPPI_NodeId node;       /* SENT: the destination; RECV: the sender */
    uint64_t cookie;        /* as given to tempest_xfer() */
    uint64_t mid;           /* SENT: the message id */
    uint32_t error;         /* SENT: 0, or why it failed (TEMPEST_CMD_E_*) */
    uint64_t addr;          /* RECV: where the data is */
    uint32_t len;           /* RECV: its length */
    uint32_t type;          /* RECV: its type (typed transfers) */
    int buf_done;           /* RECV, typed: the buffer it is in is full
                               and no longer posted (node controller 1.6) */
};

typedef void (*tempest_xfer_fn)(const struct tempest_xfer_event *ev);

/*
 * tempest_on_xfer: makes the protocol thread call fn(ev) for every XFER
 * event whose cookie names @client (TEMPEST_XFER_CLIENT_MAGIC or above;
 * the channels own TEMPEST_XFER_CLIENT_CHANNEL); @fn NULL: such events
 * are dropped (a failed XFER_SENT is reported).  Returns the previous
 * function, or NULL (changing nothing) for a bad @client.  Safe before
 * main() (libraries register from constructors).
 */
tempest_xfer_fn tempest_on_xfer(unsigned client, tempest_xfer_fn fn);

#endif /* TEMPEST_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest-nc: the node controller's tagged memory (version 1.3):
 * setting and reading access tags through the command bank.
 */
#include "tempest/nc.h"
#include "tempest/rt.h"

bool nc_tags_present(void)
{
    return (nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_TAGS) &&
           nc_reg64(TEMPEST_NC_TAGMEM_SIZE_LO) != 0;
}

int nc_tag_set(uint64_t pa, uint64_t len, unsigned tag, uint32_t *reason)
{
    uint64_t args[3] = { pa, len, tag };
    uint32_t why = TEMPEST_CMD_E_NONE;

    /*
     * A downgrade answers RETRY until every vCPU has left the exclusive
     * section the device runs it in; nc_cmd() re-commits until SUCCESS.
     * The data written before an upgrade is visible first.
     */
    __asm__ volatile("dsb ish" : : : "memory");
    if (nc_cmd(TEMPEST_CMD_TAG_SET, args, 3, 0, NULL, &why) !=
        TEMPEST_CMD_SUCCESS) {
        if (reason) {
            *reason = why;
        }
        return -1;
    }
    return 0;
}

int nc_tag_get(uint64_t pa)
{
    uint64_t args[1] = { pa };
    uint64_t tag = 0;

    if (nc_cmd(TEMPEST_CMD_TAG_GET, args, 1, 1, &tag, NULL) !=
        TEMPEST_CMD_SUCCESS) {
        return -1;
    }
    return (int)tag;
}

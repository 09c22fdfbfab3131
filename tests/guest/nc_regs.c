/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks the node controller's identity registers as a guest sees them
 * through rt_nc_read: prints MAGIC, VERSION, NODE_ID, NUM_NODES,
 * PAGE_SIZE, TAG_BLK_SIZE and FEATURES as key=value lines and exits 0 if
 * MAGIC and VERSION hold the values of tempest/tempest-hw.h.
 */
#include <stdio.h>

#include "tempest/rt.h"
#include "tempest/tempest-hw.h"

int main(void)
{
    uint32_t magic = rt_nc_read(TEMPEST_NC_MAGIC);
    uint32_t version = rt_nc_read(TEMPEST_NC_VERSION);

    printf("magic=0x%08lx\n", (unsigned long)magic);
    printf("version=0x%08lx\n", (unsigned long)version);
    printf("node_id=%lu\n", (unsigned long)rt_nc_read(TEMPEST_NC_NODE_ID));
    printf("num_nodes=%lu\n",
           (unsigned long)rt_nc_read(TEMPEST_NC_NUM_NODES));
    printf("page_size=%lu\n",
           (unsigned long)rt_nc_read(TEMPEST_NC_PAGE_SIZE));
    printf("tag_blk_size=%lu\n",
           (unsigned long)rt_nc_read(TEMPEST_NC_TAG_BLK_SIZE));
    printf("features=0x%08lx\n",
           (unsigned long)rt_nc_read(TEMPEST_NC_FEATURES));
    return magic == TEMPEST_NC_MAGIC_VALUE &&
           version == TEMPEST_NC_VERSION_VALUE ? 0 : 1;
}

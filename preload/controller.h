/* controller: see controller.c. The agent talks to it through the socket this returns. */
#ifndef CN_CONTROLLER_H
#define CN_CONTROLLER_H

/* Fork the controller for the calling process; *sock receives the agent's end (CLOEXEC). */
int cn_controller_spawn(int *sock);

#endif

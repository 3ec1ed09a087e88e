/* Intrusive doubly linked list (the kernel's list_head idea). */
#ifndef UROCE_UTIL_LIST_H
#define UROCE_UTIL_LIST_H

#include <stdbool.h>
#include "util/compiler.h"

struct ur_list {
	struct ur_list *next, *prev;
};

#define UR_LIST_INIT(name) { &(name), &(name) }

static inline void ur_list_init(struct ur_list *l)
{
	l->next = l->prev = l;
}

static inline bool ur_list_empty(const struct ur_list *l)
{
	return l->next == l;
}

static inline void ur_list__insert(struct ur_list *n, struct ur_list *prev,
				   struct ur_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void ur_list_add_tail(struct ur_list *head, struct ur_list *n)
{
	ur_list__insert(n, head->prev, head);
}

static inline void ur_list_add(struct ur_list *head, struct ur_list *n)
{
	ur_list__insert(n, head, head->next);
}

/* Moves every entry of list, in order, to the front of head; list is left
 * empty. */
static inline void ur_list_splice_front(struct ur_list *head, struct ur_list *list)
{
	struct ur_list *first = list->next, *last = list->prev;

	if (first == list)
		return;
	last->next = head->next;
	head->next->prev = last;
	head->next = first;
	first->prev = head;
	list->next = list->prev = list;
}

/* Unlinks n and leaves it self-linked, so a second del is harmless. */
static inline void ur_list_del(struct ur_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ur_list_init(n);
}

static inline bool ur_list_linked(const struct ur_list *n)
{
	return n->next != n;
}

#define ur_list_entry(ptr, type, member) container_of(ptr, type, member)

/* Unlinks the first node of head and returns it; NULL when head is empty. */
static inline struct ur_list *ur_list_pop(struct ur_list *head)
{
	struct ur_list *n = head->next;

	if (n == head)
		return NULL;
	ur_list_del(n);
	return n;
}

/* The same as the entry that node is in, or NULL. */
#define ur_list_pop_entry(head, type, member)                              \
	({                                                                  \
		struct ur_list *ur_popped_ = ur_list_pop(head);             \
									    \
		ur_popped_ ? ur_list_entry(ur_popped_, type, member) : NULL; \
	})

#define ur_list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#define ur_list_for_each_safe(pos, tmp, head)                            \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif

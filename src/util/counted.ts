/** `1 delivery`, `2 deliveries`: a count as a person writes it, not `delivery(ies)`. */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
